"""drop_connects on a broker's TCP listener: the kernel drops the client's SYNs (a full accept
queue, broker_emu/syn_gate.py), so connect() stays in SYN_SENT until the client gives up; the
attempts are traced from the kernel's socket table; lifting the rule completes handshakes again.
Real time: the kernel's SYN retransmission (1 s, then 3 s) is what a lifted gate waits for."""

from __future__ import annotations

import select
import socket
import struct
import time

import pytest

from broker_emu.runtime import run_cluster_in_thread
from broker_emu.syn_gate import syn_sent_to

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_NETLINK"), reason="Linux's accept queue and sock_diag")

API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 7, 1) + b"t"   # ApiVersions v0, correlation id 7


def _port(tc, broker_id: int) -> int:
    return tc.call(lambda: tc.cluster.brokers[broker_id].port)


def _start_connect(port: int) -> socket.socket:
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s


def _connected_within(s: socket.socket, seconds: float) -> bool:
    _, writable, _ = select.select([], [s], [], seconds)
    return bool(writable) and s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0


def _api_versions_answered(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0)
        answer = s.recv(8)
    return len(answer) == 8 and struct.unpack(">ii", answer)[1] == 7


def _events(tc, kind: str, broker: int) -> list:
    return tc.call(lambda: [e for e in tc.cluster.trace.events if e.kind == kind and e.broker == broker])


def test_a_connect_to_a_dropping_broker_stays_in_syn_sent_and_completes_once_lifted():
    with run_cluster_in_thread(brokers=2) as tc:
        rule = tc.call(lambda: tc.cluster.faults.add({"match": {"broker": 1}, "action": "drop_connects"}, 0.0))
        port = _port(tc, 1)
        attempt = _start_connect(port)
        try:
            assert not _connected_within(attempt, 0.5)          # the SYN was dropped: no handshake
            local = attempt.getsockname()[1]
            assert (local, port) in syn_sent_to({port})
            dropped = _events(tc, "connect_dropped", 1)
            assert [e.details["client_port"] for e in dropped] == [local]   # seen once, as one attempt
            assert dropped[0].details["rule"] == rule.id and tc.call(lambda: rule.applied) == 1
            assert _api_versions_answered(_port(tc, 0))           # the other broker is untouched

            assert tc.call(tc.cluster.faults.remove, rule.id)
            # the kernel retransmits the SYN 1 s after the first: now it is answered
            assert _connected_within(attempt, 3.0)
            assert _api_versions_answered(port)
            time.sleep(0.2)
            # the gate's own connections were never served: two connections, both ours
            assert len(_events(tc, "conn_open", 1)) == 2
        finally:
            attempt.close()


def test_connections_open_before_the_fault_are_still_served():
    with run_cluster_in_thread(brokers=1) as tc:
        port = _port(tc, 0)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as before:
            tc.call(lambda: tc.cluster.faults.add({"match": {"broker": 0}, "action": "drop_connects"}, 0.0))
            before.sendall(struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0)
            assert struct.unpack(">ii", before.recv(8))[1] == 7
            with pytest.raises(TimeoutError):
                socket.create_connection(("127.0.0.1", port), timeout=0.3).close()


def test_a_rule_window_ends_and_handshakes_complete_again():
    with run_cluster_in_thread(brokers=1) as tc:
        tc.call(lambda: tc.cluster.faults.add({"action": "drop_connects", "duration_ms": 400},
                                              tc.cluster.now_ms()))
        port = _port(tc, 0)
        with pytest.raises(TimeoutError):
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        time.sleep(0.5)
        assert _api_versions_answered(port)


def test_a_stopped_broker_a_restart_and_a_rule_lifted_twice():
    with run_cluster_in_thread(brokers=2) as tc:
        port = _port(tc, 1)
        tc.acall(tc.cluster.stop_broker, 1)
        rule = tc.call(lambda: tc.cluster.faults.add({"match": {"broker": 1}, "action": "drop_connects"}, 0.0))
        with pytest.raises(ConnectionRefusedError):   # nothing listens: the fault has nothing to act on
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        tc.acall(tc.cluster.start_broker, 1)
        assert _port(tc, 1) == port
        with pytest.raises(TimeoutError):             # the restarted listener drops from its start
            socket.create_connection(("127.0.0.1", port), timeout=0.3).close()
        assert tc.call(tc.cluster.faults.remove, rule.id)
        assert not tc.call(tc.cluster.faults.remove, rule.id)
        assert tc.call(tc.cluster.faults.clear) == 0
        assert _api_versions_answered(port)
        tc.acall(tc.cluster.stop_broker, 1)           # stopping it again closes nothing twice
        assert tc.call(lambda: [e for e in tc.cluster.trace.events if e.kind == "handler_error"]) == []


def test_which_rules_cover_a_brokers_listener():
    """Pure: the window and times hold; a rule for one connection id or for the bootstrap address
    never covers a broker's own listener (an attempt has no id, and it is not the front door)."""
    from broker_emu.faults.engine import FaultEngine

    engine = FaultEngine(brokers={0, 1})
    seen: list[int] = []
    unwatch = engine.watch(lambda: seen.append(len(engine.rules)))
    windowed = engine.add({"action": "drop_connects", "at_ms": 100, "duration_ms": 50}, 0.0)
    engine.add({"match": {"connection": 3}, "action": "drop_connects"}, 0.0)
    engine.add({"match": {"bootstrap": True}, "action": "drop_connects"}, 0.0)
    counted = engine.add({"match": {"broker": 1}, "action": "drop_connects", "times": 2}, 0.0)
    assert [r.id for r in engine.syn_drop_rules(0, 120.0)] == [windowed.id]
    assert [r.id for r in engine.syn_drop_rules(1, 10.0)] == [counted.id]
    assert engine.next_syn_drop_change_ms(10.0) == 100 and engine.next_syn_drop_change_ms(120.0) == 150
    counted.applied = 2                       # two attempts seen: the rule is spent
    assert engine.syn_drop_rules(1, 10.0) == []
    assert seen == [1, 2, 3, 4]               # each add told the watchers
    unwatch()
    unwatch()                                 # twice: harmless
    engine.clear()
    assert seen == [1, 2, 3, 4]


def test_where_the_kernel_keeps_no_such_rule_the_fault_accepts_and_never_reads(monkeypatch):
    """Not Linux (simulated): the gate stays open, the connection completes, and drop_connects acts
    as accept_never_read, as before; the matrix marks a real-time client N/A for the scenario."""
    from broker_emu import syn_gate
    from conformance.adapters.confluent import ConfluentAdapter
    from conformance.model import Status
    from conformance.runner import Plan, run_plan
    from conformance.scenarios import BY_ID

    monkeypatch.setattr(syn_gate, "DROPS_SYNS", False)
    with run_cluster_in_thread(brokers=1) as tc:
        tc.call(lambda: tc.cluster.faults.add({"action": "drop_connects"}, 0.0))
        with socket.create_connection(("127.0.0.1", _port(tc, 0)), timeout=2) as s:
            s.sendall(struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0)
            s.settimeout(0.5)
            with pytest.raises(TimeoutError):
                s.recv(8)
        assert _events(tc, "fault_applied", 0)[0].details["syn_drop"] is False
    (result,) = run_plan(Plan([BY_ID["kip19.connection-setup-timeout"]], [ConfluentAdapter()]))
    assert (result.status, result.message) == (Status.NA, "dropped connection attempts need Linux")
