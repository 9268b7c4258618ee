"""broker_emu.trace_reading: the one reading of a trace that contracts, timelines and campaigns share."""

import pytest

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind, Trace, TraceEvent
from broker_emu.trace_reading import abandoned, exchanges, first_to_give_up, purgatory_stays
from tests.broker_emu.helpers import METADATA, WireClient


def ev(t, kind, broker=0, conn=1, corr=None, api=None, **details):
    return TraceEvent(t, Kind(kind), broker=broker, conn=conn, correlation_id=corr, api=api, details=details)


def test_emit_refuses_a_kind_nobody_reads():
    trace = Trace(clock=lambda: 0.0)
    trace.emit(Kind.RECV, broker=0)
    trace.emit("send", broker=0)       # a kind's value is accepted too
    with pytest.raises(ValueError):
        trace.emit("recieve", broker=0)
    assert [e.kind for e in trace.events] == [Kind.RECV, Kind.SEND]


def test_requests_pair_with_their_answer_on_their_own_connection():
    trace = [
        ev(0, "recv", conn=1, corr=7, api="Metadata"),
        ev(1, "recv", broker=1, conn=1, corr=7, api="Produce"),   # same conn id, other broker
        ev(5, "send", conn=1, corr=7, api="Metadata"),
        ev(9, "send", broker=1, conn=1, corr=7, api="Produce"),
    ]
    got = {(x.request.broker, x.api): x.wait_ms for x in exchanges(trace)}
    assert got == {(0, "Metadata"): 5, (1, "Produce"): 8}
    assert [x.api for x in exchanges(trace, "produce")] == ["Produce"]


def test_a_client_close_with_an_answer_owed_abandons_the_first_request_only():
    trace = [
        ev(0, "recv", conn=1, corr=1, api="Metadata"),
        ev(1, "send", conn=1, corr=1, api="Metadata"),
        ev(2, "recv", conn=1, corr=2, api="Produce"),
        ev(3, "recv", conn=1, corr=3, api="Produce"),
        ev(30, "conn_close", conn=1, closed_by="client"),
        ev(0, "recv", conn=2, corr=1, api="Metadata"),              # an idle connection closed: nothing owed
        ev(1, "send", conn=2, corr=1, api="Metadata"),
        ev(31, "conn_close", conn=2, closed_by="client"),
        ev(0, "recv", conn=3, corr=1, api="Fetch"),                 # closed by the broker: not abandoned
        ev(40, "conn_close", conn=3, closed_by="broker"),
    ]
    dropped = abandoned(trace)
    assert [(x.request.conn, x.request.correlation_id, x.abandoned_after_ms) for x in dropped] == [(1, 2, 28)]
    assert abandoned(trace, "Metadata") == []


def test_purgatory_stays_end_in_completion_or_expiry():
    trace = [
        ev(0, "purgatory_enter", corr=1, api="Produce", timeout_ms=100),
        ev(1, "purgatory_enter", corr=2, api="Fetch"),
        ev(50, "purgatory_complete", corr=2, api="Fetch"),
        ev(100, "purgatory_expire", corr=1, api="Produce"),
        ev(120, "purgatory_enter", corr=3, api="Produce", timeout_ms=100),
    ]
    stays = purgatory_stays(trace)
    assert [(s.enter.correlation_id, s.expired, s.duration_ms) for s in stays] == [(1, True, 100), (2, False, 49), (3, False, None)]
    assert stays[0].timeout_ms == 100.0


@pytest.mark.parametrize("close_at, who, after", [(60, "client", 60), (150, "broker", 100), (None, "broker", 100)])
def test_who_gave_up_first_on_the_parked_produce(close_at, who, after):
    trace = [ev(0, "recv", corr=1, api="Produce"), ev(0, "purgatory_enter", corr=1, api="Produce", timeout_ms=100),
             ev(100, "purgatory_expire", corr=1, api="Produce")]
    if close_at is not None:
        trace.append(ev(close_at, "conn_close", closed_by="client"))
    trace.sort(key=lambda e: e.t_ms)
    first = first_to_give_up(trace)
    assert (first.who, first.after_ms) == (who, after)


def test_nobody_gave_up_when_nothing_was_parked_or_it_completed():
    assert first_to_give_up([]).who == "none"
    done = [ev(0, "purgatory_enter", corr=1, api="Produce", timeout_ms=100), ev(5, "purgatory_complete", corr=1, api="Produce")]
    assert first_to_give_up(done).who == "none"
    long_poll = [ev(0, "purgatory_enter", corr=1, api="Fetch"), ev(500, "purgatory_expire", corr=1, api="Fetch")]
    assert first_to_give_up(long_poll).who == "none"   # a long poll ending is not a timeout


async def test_the_emulator_trace_reads_back_as_exchanges(autojump_clock):
    async with open_cluster(1, listen=False, topics=[("t", 1, 1)]) as cluster:
        w = WireClient(cluster.connect(0))
        await w.call(METADATA, 1, {"topics": None})
        xs = exchanges(cluster.trace.events, "Metadata")
    assert len(xs) == 1 and xs[0].answer is not None and xs[0].wait_ms is not None and not xs[0].abandoned
    assert xs[0].close is None   # read while the connection is still open
