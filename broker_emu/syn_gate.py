"""A TCP listener that can stop completing handshakes, as a firewall dropping SYNs would, with
no root and no packet filter: Linux drops an incoming SYN while the listening socket's accept
queue is full (``tcp_conn_request``: ``sk_acceptq_is_full`` comes before any SYN cookie, and
``tcp_abort_on_overflow`` only concerns the final ACK). So the gate re-listens with a backlog of
0 (the queue then holds one connection), stops accepting, and fills the queue with connections
of its own until one of them stays in SYN_SENT: that one is the proof the kernel now drops every
SYN to the port. A client's connect() then stays in SYN_SENT, the kernel retransmitting its SYN
1 s, 3 s, 7 s... later, until the client's own setup timeout abandons it. Opening the gate
restores the backlog and the accept loop; a client SYN retransmitted after that completes.

What the server can no longer see is the attempts (the SYNs never reach user space); the
client's sockets in SYN_SENT can be read from the kernel's socket table of this host
(``syn_sent_to``, sock_diag over netlink), which is what ``broker_emu/dropped_connects.py`` traces.
"""

from __future__ import annotations

import errno
import select
import socket
import struct
import sys
from typing import Awaitable, Callable

import trio

# Linux's accept-queue rule is what the gate relies on; elsewhere drop_connects on TCP acts as
# accept_never_read (faults/apply.on_connect)
DROPS_SYNS = sys.platform.startswith("linux")
BACKLOG = 0xFFFF        # trio.open_tcp_listeners' default: the kernel caps it at somaxconn
MAX_FILLERS = 8         # the queue of a backlog-0 listener holds one; more means SYNs are not dropped
_ACCEPT_ERRORS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}   # as trio.serve_listeners sleeps them off


class SynGate:
    """One listener's accept loop, which ``close`` stops with the kernel dropping SYNs and ``open``
    restores. Connections the kernel completed before ``close`` wait in the queue and are
    served after ``open`` (a client sees a broker that accepted but never read, meanwhile)."""

    def __init__(self, listener: trio.SocketListener):
        self.listener = listener
        self.closed = False
        self._fillers: list[socket.socket] = []     # ours, to keep the queue full
        self._pending_ports: set[int] = set()        # our fillers' local ports left in SYN_SENT
        self._filler_ports: set[int] = set()         # our queued fillers' ports: closed when accepted
        self._reopened = trio.Event()
        self._accepting: trio.CancelScope | None = None

    @property
    def port(self) -> int:
        return self.listener.socket.getsockname()[1]

    @property
    def own_ports(self) -> set[int]:
        """Local ports of the gate's own connections in SYN_SENT (not a client's attempts)."""
        return set(self._pending_ports)

    def close(self) -> bool:
        """Stop completing handshakes; False (and nothing changed) when the kernel completes them
        anyway (not Linux's accept-queue rule)."""
        if self.closed:
            return True
        if not DROPS_SYNS:
            return False
        sock = self.listener.socket
        sock.listen(0)
        address = sock.getsockname()[:2]
        for _ in range(MAX_FILLERS):
            filler = socket.socket(sock.family, socket.SOCK_STREAM)
            filler.setblocking(False)
            self._fillers.append(filler)
            try:
                filler.connect(address)
            except BlockingIOError:
                pass
            except OSError:
                break
            # on loopback the kernel runs the handshake within connect(): still pending = SYN dropped
            _, writable, _ = select.select([], [filler], [], 0)
            if not writable:
                self._pending_ports.add(filler.getsockname()[1])
                break
            self._filler_ports.add(filler.getsockname()[1])
        if not self._pending_ports:
            self._release_fillers()
            sock.listen(BACKLOG)
            return False
        self.closed = True
        self._reopened = trio.Event()
        if self._accepting is not None:
            self._accepting.cancel()
        return True

    def open(self) -> None:
        """Complete handshakes again; our queued fillers are closed as the accept loop meets them."""
        if not self.closed:
            return
        self.listener.socket.listen(BACKLOG)
        self.closed = False
        self._release_fillers()
        self._reopened.set()

    def release(self) -> None:
        """The listener is going away: close the gate's own sockets."""
        self._release_fillers()
        self._filler_ports.clear()

    def _release_fillers(self) -> None:
        for filler in self._fillers:
            filler.close()
        self._fillers.clear()
        self._pending_ports.clear()

    async def serve(self, handler: Callable[[trio.SocketStream], Awaitable[None]], nursery: trio.Nursery) -> None:
        """Accept while open, each connection run by ``handler`` in ``nursery`` (trio.serve_listeners'
        loop, with the gate); runs until the listener's scope is cancelled, then closes the
        listener at once, as serve_listeners does: a broker stopped refuses connections before its
        connections have finished closing."""
        try:
            await self._serve(handler, nursery)
        finally:
            self.release()
            self.listener.socket.close()

    async def _serve(self, handler: Callable[[trio.SocketStream], Awaitable[None]], nursery: trio.Nursery) -> None:
        while True:
            if self.closed:
                await self._reopened.wait()
                continue
            stream = None
            with trio.CancelScope() as self._accepting:   # close() cancels it
                try:
                    stream = await self.listener.accept()
                except OSError as exc:
                    if exc.errno not in _ACCEPT_ERRORS:
                        raise
                    await trio.sleep(0.1)
            self._accepting = None
            if stream is not None and not self._ours(stream):
                nursery.start_soon(handler, stream)

    def _ours(self, stream: trio.SocketStream) -> bool:
        """True for one of the gate's own fillers, closed here and never served."""
        if not self._filler_ports:
            return False
        try:
            port = stream.socket.getpeername()[1]
        except OSError:
            return False
        if port not in self._filler_ports:
            return False
        self._filler_ports.discard(port)
        stream.socket.close()
        return True


# -- the kernel's socket table: sock_diag over netlink (linux/inet_diag.h) ----------------------
_NETLINK_SOCK_DIAG, _SOCK_DIAG_BY_FAMILY = 4, 20
_NLM_F_REQUEST, _NLM_F_DUMP, _NLMSG_ERROR, _NLMSG_DONE = 0x1, 0x300, 2, 3
_TCP_SYN_SENT = 2
_HEADER = struct.Struct("=IHHII")                # nlmsghdr
_REQUEST = struct.Struct("=BBBBI48x")            # inet_diag_req_v2, its sockid left zero (no filter)


def syn_sent_to(ports: set[int]) -> set[tuple[int, int]]:
    """(local port, remote port) of every TCP socket of this host in SYN_SENT towards one of
    ``ports``: a connection attempt still waiting for its SYN to be answered. Only the kernel
    filters by state (a few sockets), so a read costs about what the socket table's size does.
    OSError where sock_diag is missing (not Linux)."""
    found: set[tuple[int, int]] = set()
    for family in (socket.AF_INET, socket.AF_INET6):   # a JVM connects with IPv4-mapped IPv6 sockets
        for local, remote in _dump_syn_sent(family):
            if remote in ports:
                found.add((local, remote))
    return found


def _dump_syn_sent(family: int) -> list[tuple[int, int]]:
    request = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << _TCP_SYN_SENT)
    out: list[tuple[int, int]] = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as nl:
        nl.send(_HEADER.pack(_HEADER.size + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0) + request)
        while True:
            data = nl.recv(65536)
            offset = 0
            while offset + _HEADER.size <= len(data):
                length, kind = _HEADER.unpack_from(data, offset)[:2]
                if kind == _NLMSG_DONE:
                    return out
                if kind == _NLMSG_ERROR:
                    code = -struct.unpack_from("=i", data, offset + _HEADER.size)[0]
                    raise OSError(code, f"sock_diag: {errno.errorcode.get(code, code)}")
                # inet_diag_msg: family, state, timer, retrans, then the sockid (sport, dport big-endian)
                local, remote = struct.unpack_from(">HH", data, offset + _HEADER.size + 4)
                out.append((local, remote))
                offset += (length + 3) & ~3
            if not data:
                return out
