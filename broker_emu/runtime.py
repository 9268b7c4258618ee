"""Starting and stopping a cluster: ``open_cluster`` for trio code, ``run_cluster_in_thread``
for ordinary blocking code (tests with third-party clients)."""

from __future__ import annotations

import contextlib
from typing import Any, AsyncContextManager, AsyncIterator, Callable, Iterable, Iterator

import trio

from broker_emu import waits
from broker_emu.cluster import Cluster
from broker_emu.faults.named import BlockingFaults
from broker_emu.handler_catalog import register_all
from broker_emu.listeners import connect_in_memory, serve_broker
from kafka_common.trio_thread import TrioThread

TopicSpec = tuple  # (name, partitions, replication_factor)


@contextlib.asynccontextmanager
async def open_cluster(brokers: int = 3, *, topics: Iterable[TopicSpec] = (), config: dict[str, Any] | None = None,
                       listen: bool = True, host: str = "127.0.0.1", port: int = 0, trace_sink=None) -> AsyncIterator[Cluster]:
    """A running cluster. ``listen=False`` serves only in-memory connections
    (``cluster.connect(broker_id)``), for exact virtual-time tests. ``port`` 0 picks free ports;
    otherwise brokers listen on port, port+1, ..."""
    register_all()
    cluster = Cluster(brokers, config, host=host, trace_sink=trace_sink)
    async with trio.open_nursery() as nursery:
        await cluster.start_coordinators(nursery, serve_broker, connect_in_memory)
        if listen:
            for i, b in enumerate(cluster.brokers.values()):
                await nursery.start(serve_broker, cluster, b, port + i if port else 0)
        for spec in topics:
            name, parts, rf = (tuple(spec) + (None, None))[:3]
            cluster.create_topic(name, parts, rf)
        try:
            yield cluster
        finally:
            nursery.cancel_scope.cancel()
            cluster.security.close()


class ThreadedCluster:
    """A cluster on its own trio thread (``kafka_common.trio_thread``, the blocking client faces'
    runner too). Use ``call(fn, *args)`` to run code on the cluster's thread (its state is not
    thread-safe)."""

    def __init__(self, opener: Callable[..., AsyncContextManager[Any]] | None = None, **kwargs: Any):
        self._open = opener or open_cluster   # broker_emu.proxy runs its proxy the same way
        self._kwargs = kwargs
        self._error: BaseException | None = None
        self.cluster: Cluster | None = None
        self._thread = TrioThread("broker-emu", self._body, self._exited)

    def _exited(self, error: BaseException | None) -> None:
        # surfaced to the starting thread, or at stop(); printed at once if the cluster was running
        self._error = error
        if error is not None and self.cluster is not None:
            import traceback
            traceback.print_exception(error)

    async def _body(self) -> None:
        async with self._open(**self._kwargs) as cluster:
            self.cluster = cluster
            await self._thread.until_stopped()

    def start(self) -> "ThreadedCluster":
        self._thread.start()
        if self._error is not None:
            raise RuntimeError(f"the cluster failed to start: {self._error!r}") from self._error
        return self

    @property
    def bootstrap(self) -> str:
        assert self.cluster is not None
        return self.cluster.bootstrap

    def call(self, fn, *args):
        """Run a plain function on the cluster's thread and return its result."""
        async def run():
            return fn(*args)
        return self._thread.run(run)

    def acall(self, afn, *args):
        return self._thread.run(afn, *args)

    @property
    def faults(self) -> BlockingFaults:
        """The named faults (``tc.faults.latency(api="Produce", ms=500)``), added on the cluster's thread."""
        return BlockingFaults(self.call, lambda: self.cluster.faults)   # type: ignore[union-attr]

    def wait_for(self, what: str, timeout: float = 5.0, **params: Any) -> dict[str, Any]:
        """``Cluster.wait_for`` for blocking code: blocks this thread (the cluster's clock decides the
        timeout); raises ``broker_emu.waits.WaitTimeout`` with what was last seen."""
        async def run() -> dict[str, Any]:
            return await waits.wait_for(self.cluster, what, timeout, **params)
        return self._thread.run(run)

    def stop(self) -> None:
        self._thread.stop(join_timeout=10)
        if self._error is not None and self.cluster is not None:
            raise RuntimeError(f"the cluster crashed while running: {self._error!r}") from self._error


@contextlib.contextmanager
def run_cluster_in_thread(**kwargs: Any) -> Iterator[ThreadedCluster]:
    tc = ThreadedCluster(**kwargs).start()
    try:
        yield tc
    finally:
        tc.stop()


def run_until_stopped(main: Callable[..., Any], *args: Any) -> int:
    """``trio.run(main, *args)`` for a command that serves until SIGINT/SIGTERM (serve, proxy): its
    exit status, and one line on stderr instead of a traceback (a nursery wraps what it raises in
    exception groups): 2 for a ValueError (a setting it refused: a usage error), 1 for an OSError
    (a port in use, an upstream that does not answer)."""
    import sys

    try:
        trio.run(main, *args)
    except KeyboardInterrupt:
        return 0
    except BaseException as exc:
        error = exc
        while isinstance(error, BaseExceptionGroup):
            error = error.exceptions[0]
        if not isinstance(error, (ValueError, OSError)):
            raise
        print(f"error: {error}", file=sys.stderr)
        return 1 if isinstance(error, OSError) else 2
    return 0
