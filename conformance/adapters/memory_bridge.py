"""The emulator's in-memory connections for a client on another thread: our blocking face, whose
network thread runs a trio of its own while the cluster runs on its own thread
(``run_cluster_in_thread``). A ``connect`` for the client: each connection is a socket pair whose
far end a relay on the cluster's thread joins to an in-memory connection
(``Cluster.open_connection``), so the emulator decides each attempt as for an in-process client.
That is what ``in_memory_only`` scenarios need: a drop_connects fault holds the attempt
(``connect_dropped`` in the trace) as a firewall dropping SYNs would — on loopback TCP the kernel
completes the handshake — and the client's connection setup timeout must give up on it.

The client's ``connect`` returns once the in-memory connection is open; if the client gives up
first (its setup timeout cancels the call) it closes its end, and the relay, waiting on the other,
abandons the attempt. Each relay waits in a thread of its own on the cluster's thread
(``ThreadedCluster.acall``), for as long as its connection lives."""

from __future__ import annotations

import socket
import threading
from typing import Any

import trio

from client.transport import Connect

STREAM_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


def memory_connect(tc: Any) -> Connect:
    """A ``connect`` to ``tc``'s brokers (a ThreadedCluster) over in-memory connections. A
    bootstrap address (node -1) is the broker listening on its port."""
    by_port: dict[int, int] = tc.call(lambda: {b.port: b.id for b in tc.cluster.brokers.values()})

    async def connect(node: int, host: str, port: int) -> trio.abc.Stream:
        broker = node if node >= 0 else by_port.get(port, 0)
        near, far = socket.socketpair()
        token, opened, outcome = trio.lowlevel.current_trio_token(), trio.Event(), dict[str, BaseException]()

        def settled(error: BaseException | None) -> None:   # on the relay's side, once the attempt is decided
            if error is not None:
                outcome["error"] = error
            try:
                token.run_sync_soon(opened.set)
            except trio.RunFinishedError:
                pass

        threading.Thread(target=_relay_thread, args=(tc, broker, far, settled), name="memory-bridge", daemon=True).start()
        try:
            await opened.wait()
        except BaseException:
            near.close()   # given up (the setup timeout): the relay abandons the attempt
            raise
        if "error" in outcome:
            near.close()
            raise OSError(f"in-memory connection to broker {broker}: {outcome['error']}")
        return trio.SocketStream(trio.socket.from_stdlib_socket(near))

    return connect


def _relay_thread(tc: Any, broker: int, far: socket.socket, settled: Any) -> None:
    try:
        tc.acall(_relay, tc.cluster, broker, far, settled)
    except BaseException as exc:  # noqa: BLE001 - the cluster stopped (its run ended) or refused: the client hears of it
        settled(exc)
    finally:
        far.close()


async def _relay(cluster: Any, broker: int, far: socket.socket, settled: Any) -> None:
    client = trio.SocketStream(trio.socket.from_stdlib_socket(far))
    try:
        server = await _open_unless_abandoned(cluster, broker, client)
        if server is None:
            return
        settled(None)
        async with server, trio.open_nursery() as nursery:
            nursery.start_soon(_pump, client, server, nursery.cancel_scope)
            nursery.start_soon(_pump, server, client, nursery.cancel_scope)
    except STREAM_ERRORS as exc:
        settled(exc)
    finally:
        await trio.aclose_forcefully(client)


async def _open_unless_abandoned(cluster: Any, broker: int, client: trio.SocketStream) -> trio.abc.Stream | None:
    """The in-memory connection, or None if the client closed its end first (it sends nothing
    before its connect has returned)."""
    got: list[trio.abc.Stream] = []
    async with trio.open_nursery() as nursery:
        async def open_it() -> None:
            got.append(await cluster.open_connection(broker))
            nursery.cancel_scope.cancel()

        async def abandoned() -> None:
            await client.receive_some(1)
            nursery.cancel_scope.cancel()

        nursery.start_soon(open_it)
        nursery.start_soon(abandoned)
    return got[0] if got else None


async def _pump(src: trio.abc.Stream, dst: trio.abc.Stream, done: trio.CancelScope) -> None:
    try:
        while data := await src.receive_some(65536):
            await dst.send_all(data)
    except STREAM_ERRORS:
        pass
    finally:
        done.cancel()
