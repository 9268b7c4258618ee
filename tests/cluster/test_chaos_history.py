"""Client histories of chaos runs (conformance/chaos/history.py): what our client was asked and
what it answered, on the virtual clock, and the same history back from Parquet."""

from collections import Counter

from conformance.chaos.history_parquet import file_name, read_parquet, write_parquet
from conformance.chaos.ours import run_seed


def test_a_seed_records_every_send_and_poll_with_its_outcome_on_the_virtual_clock():
    result = run_seed(3, duration=4.0)
    ops = result.history.ops
    kinds = Counter((op.f, op.type) for op in ops)
    sent = result.accounting.totals()["sent"]
    assert kinds["send", "invoke"] == kinds["send", "ok"] == sent > 0       # every record acknowledged here
    assert kinds["poll", "invoke"] >= kinds["poll", "ok"] > 0
    assert kinds["assign", "ok"] == 1
    assert [op.index for op in ops] == list(range(len(ops)))
    assert all(a.time <= b.time for a, b in zip(ops, ops[1:]))              # one clock, in order
    assert ops[-1].time > 4.0                                              # virtual seconds, not wall ones
    acked = {(op.partition, op.offset): op.value for op in ops if op.f == "send" and op.type == "ok"}
    read = {(r.partition, r.offset): r.value for op in ops if op.f == "poll" and op.records for r in op.records}
    assert acked == read                          # the consumer read exactly what was acknowledged, where
    for op in ops:
        if op.type != "invoke" and op.invoke is not None:
            assert ops[op.invoke].f == op.f and ops[op.invoke].process == op.process


def test_a_history_round_trips_through_parquet(tmp_path):
    history = run_seed(5, duration=3.0).history
    path = write_parquet(history, tmp_path, client="ours", seed=5)
    assert path.endswith(file_name("ours", 5))
    back = read_parquet(tmp_path)
    assert list(back) == [("ours", 5, "")]
    assert back["ours", 5, ""].ops == history.ops


def test_the_checker_sees_what_acks_1_costs_and_nothing_under_the_promised_settings():
    """The accounting's positive control, seen from the clients' side: with acks=1 a
    truncation takes acknowledged writes; every record the accounting finds lost is unseen by
    the consumer, and those a consumer read past are named lost-write (with the offset handed
    to the next record: inconsistent-offsets) — counted, not judged. acks=all: nothing named."""
    weak = [run_seed(seed, acks="1", idempotence=False) for seed in range(6)]
    for r in weak:
        lost = r.accounting.totals()["lost"]
        counts = r.check.counts()
        assert counts["unseen"] >= lost and (lost == 0) == (counts["unseen"] == 0), (r.seed, counts)
        assert not r.bad()
    assert sum(r.check.counts()["lost-write"] for r in weak) > 0
    assert sum(r.check.counts()["inconsistent-offsets"] for r in weak) > 0
    strong = [run_seed(seed) for seed in range(6)]
    assert [r.check.named() for r in strong] == [[]] * 6
    assert all(r.check.counts()["unseen"] == 0 for r in strong)
