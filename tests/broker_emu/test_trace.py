import io
import json

from broker_emu.trace import EVENT_BYTES, Trace


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_events_carry_ms_since_start_and_filter():
    clock, sink = FakeClock(), io.StringIO()
    trace = Trace(clock, sink=sink)
    trace.emit("conn_open", broker=0, conn=1, client_addr="127.0.0.1:5000")
    clock.now += 1.5
    trace.emit("recv", broker=0, conn=1, client_id="a", api="Produce", api_key=0, api_version=9, correlation_id=3)
    clock.now += 0.25
    trace.emit("conn_close", broker=0, conn=1, client_id="a", details={"closed_by": "client", "reason": "eof"})
    assert [e.t_ms for e in trace.events] == [0.0, 1500.0, 1750.0]
    assert [e.kind for e in trace.query(client_id="a")] == ["recv", "conn_close"]
    assert [e.kind for e in trace.query(api="produce")] == ["recv"]
    assert [e.kind for e in trace.query(since_ms=1600)] == ["conn_close"]
    assert [e.kind for e in trace.query(kind=["conn_open", "conn_close"])] == ["conn_open", "conn_close"]
    lines = [json.loads(line) for line in sink.getvalue().splitlines()]
    assert lines[2] == {"t_ms": 1750.0, "kind": "conn_close", "broker": 0, "conn": 1, "client_id": "a",
                        "details": {"closed_by": "client", "reason": "eof"}}


def test_memory_is_a_ring_bounded_in_bytes_but_sink_keeps_everything():
    sink = io.StringIO()
    trace = Trace(FakeClock(), sink=sink, max_bytes=10 * EVENT_BYTES)
    for i in range(25):
        trace.emit("recv", correlation_id=i)
    assert len(trace.events) == 10 and trace.dropped == 15 and trace.bytes <= trace.max_bytes
    assert [e.correlation_id for e in trace.events] == list(range(15, 25))   # the newest stay
    assert len(sink.getvalue().splitlines()) == 25


def test_a_long_client_id_counts_against_the_budget():
    trace = Trace(FakeClock(), max_bytes=1 << 20)
    for i in range(100):
        trace.emit("recv", correlation_id=i, client_id="c" * 32_000)
    assert 20 <= len(trace.events) <= 32 and trace.bytes <= 1 << 20


def test_subscribers_see_events_live():
    trace = Trace(FakeClock())
    seen = []
    unsubscribe = trace.subscribe(seen.append)
    trace.emit("send", correlation_id=1)
    unsubscribe()
    trace.emit("send", correlation_id=2)
    assert [e.correlation_id for e in seen] == [1]
