"""``drop_connects`` on TCP: while a rule covers a broker, its listeners' gates are closed (the
kernel drops the client's SYNs, ``broker_emu/syn_gate.py``), and the attempts, which never reach
user space, are read from the kernel's table of this host's sockets: each client socket in
SYN_SENT towards the broker's ports is one attempt, traced ``connect_dropped`` when first seen
(within ``POLL_S``). That is only possible on the same host, which is where the emulator runs
its clients (loopback); an attempt from another host is dropped but not seen.

The rules decide as ``FaultEngine.syn_drop_rules`` says: a rule's window and ``times`` hold
(each attempt seen counts), ``after`` and ``probability`` cannot be drawn per attempt, since the
kernel drops the SYN before anything here knows of it.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, Sequence

import trio

from broker_emu.faults.engine import FaultEngine
from broker_emu.syn_gate import SynGate, syn_sent_to
from broker_emu.trace import Kind, Trace

POLL_S = 0.02   # how often the socket table is read while the gates are closed (a read costs ~2 ms)


class DropHost(Protocol):
    """What the keeper needs of what serves the listeners: the cluster, or the proxy."""

    @property
    def faults(self) -> FaultEngine: ...
    @property
    def trace(self) -> Trace: ...

    def now_ms(self) -> float: ...


class DropKeeper:
    """Keeps one broker's gates closed exactly while a drop_connects rule covers it. ``update``
    runs at once when the rules change (a rule added before the client starts has closed the
    gates when ``add`` returns); ``run`` follows the rules' windows and traces the attempts."""

    def __init__(self, host: DropHost, broker_id: int, gates: Sequence[SynGate]):
        self.host, self.broker_id, self.gates = host, broker_id, list(gates)
        self.closed = False
        self._seen: set[tuple[int, int]] = set()
        self._failed: set[int] = set()   # rules whose gates would not close (not Linux)
        self._wake = trio.Event()
        self._unwatch = host.faults.watch(self.update)

    def update(self) -> None:
        """Close or open the gates as the rules say now."""
        rules = self.host.faults.syn_drop_rules(self.broker_id, self.host.now_ms())
        if rules and not self.closed and {rule.id for rule in rules} - self._failed:
            shut = [gate for gate in self.gates if gate.close()]
            self.closed = bool(shut)
            if not shut:   # the kernel completes handshakes anyway: told once, not at every change
                self._failed |= {rule.id for rule in rules}
            for rule in rules:
                self.host.trace.emit(Kind.FAULT_APPLIED, broker=self.broker_id, details={
                    "rule": rule.id, "action": rule.action.to_dict(), "ports": [g.port for g in shut],
                    "syn_drop": bool(shut)})
        elif not rules and self.closed:
            for gate in self.gates:
                gate.open()
            self.closed = False
            self._seen.clear()
        self._wake.set()

    def stop(self) -> None:
        """The listeners are going away: stop watching, close the gates' own sockets."""
        self._unwatch()
        for gate in self.gates:
            gate.release()

    async def run(self) -> None:
        try:
            while True:
                self._wake = trio.Event()
                if self.closed:
                    self._observe()
                    self.update()   # a window that ended, times reached
                    await trio.sleep(POLL_S)
                    continue
                next_ms = self.host.faults.next_syn_drop_change_ms(self.host.now_ms())
                with trio.move_on_after(math.inf if next_ms is None else max(0.0, next_ms - self.host.now_ms()) / 1000):
                    await self._wake.wait()
                self.update()
        finally:
            self.stop()

    def _observe(self) -> None:
        ports = {gate.port for gate in self.gates if gate.closed}
        ours = set().union(*(gate.own_ports for gate in self.gates))
        try:
            now = {(local, remote) for local, remote in syn_sent_to(ports) if local not in ours}
        except OSError:
            return
        rules = self.host.faults.syn_drop_rules(self.broker_id, self.host.now_ms())
        for local, remote in sorted(now - self._seen):
            details: dict[str, Any] = {"rule": rules[0].id if rules else None, "client_port": local, "port": remote,
                                       "seen": "SYN_SENT"}
            self.host.trace.emit(Kind.CONNECT_DROPPED, broker=self.broker_id, details=details)
            for rule in rules:
                rule.matched += 1
                rule.applied += 1
        self._seen = now
