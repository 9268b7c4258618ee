"""Client histories of chaos runs (conformance/chaos/history.py): what our client was asked and
what it answered, on the virtual clock, and the same history back from Parquet; the blocking
face recorded alike (conformance/chaos/history_blocking.py), in real time."""

import time
from collections import Counter

import client
from broker_emu.plants import Plant
from broker_emu.runtime import run_cluster_in_thread
from conformance.chaos.checker import check
from conformance.chaos.history import History
from conformance.chaos.history_blocking import RecordedBlockingConsumer, RecordedBlockingProducer
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


# -- the blocking face, in real time ---------------------------------------------------------------

def _read(consumer, want: int, seconds: float = 10.0) -> int:
    got, deadline = 0, time.monotonic() + seconds
    while got < want and time.monotonic() < deadline:
        got += len(consumer.poll(0.2))
    return got


def test_the_blocking_face_records_sends_and_polls_and_a_planted_loss_is_named():
    seed = next(s for s in range(100) if Plant("lose-ack", s).skip <= 10)
    with run_cluster_in_thread(brokers=3, topics=[("t", 1, 3)], config={"min.insync.replicas": 2}) as tc:
        tc.call(setattr, tc.cluster, "plant", Plant("lose-ack", seed))
        history = History(time.monotonic)
        with client.Producer({"bootstrap.servers": tc.bootstrap, "acks": "all", "enable.idempotence": True}) as p:
            producer = RecordedBlockingProducer(p, history, "producer")
            offsets = [producer.send("t", b"v%d" % i, partition=0).result(10).offset for i in range(20)]
        with client.Consumer({"bootstrap.servers": tc.bootstrap, "auto.offset.reset": "earliest"}) as c:
            consumer = RecordedBlockingConsumer(c, history, "consumer")
            consumer.assign([client.TopicPartition("t", 0)])
            assert _read(consumer, 19) == 19                   # one acknowledged record is not there
        assert tc.call(lambda: tc.cluster.plant.fired) == 1
    assert len(set(offsets)) == 19
    found = check(history)
    # one producer: its next send was acknowledged at the lost one's offset, so its sends went back too
    assert found.named() == ["lost-write", "inconsistent-offsets", "nonmonotonic-send"]
    assert found.counts()["unseen"] == 1
    done = Counter((op.f, op.type) for op in history.ops)
    assert done["send", "ok"] == 20 and done["assign", "ok"] == 1 and done["poll", "ok"] == done["poll", "invoke"]


def test_the_blocking_face_records_transactions_and_a_planted_aborted_read_is_named():
    with run_cluster_in_thread(brokers=3, topics=[("t", 1, 3)]) as tc:
        tc.call(setattr, tc.cluster, "plant", Plant("aborted-read", 0))
        history = History(time.monotonic)
        config = {"bootstrap.servers": tc.bootstrap, "transactional.id": "tx"}
        with client.Producer(config) as p:
            producer = RecordedBlockingProducer(p, history, "txn-producer-1", transactional_id="tx")
            producer.init_transactions(10)
            for n, end in enumerate(("commit", "abort", "commit")):
                producer.begin_transaction()
                producer.send("t", b"t%d" % n, partition=0).result(10)
                (producer.commit_transaction if end == "commit" else producer.abort_transaction)(10)
        with client.Consumer({"bootstrap.servers": tc.bootstrap, "auto.offset.reset": "earliest",
                              "isolation.level": "read_committed", "group.id": "g"}) as c:
            consumer = RecordedBlockingConsumer(c, history, "reader", isolation="read_committed")
            consumer.assign([client.TopicPartition("t", 0)])
            assert _read(consumer, 3) == 3                     # the aborted one too: the plant hid its abort
            consumer.commit_sync({("t", 0): consumer.position(("t", 0), 5)}, 5)
    found = check(history)
    assert found.named() == ["aborted-read"]
    fs = [(op.f, op.type, op.txn) for op in history.ops if op.f in ("begin", "commit_txn", "abort_txn")]
    assert fs == [("begin", "ok", 1), ("commit_txn", "invoke", 1), ("commit_txn", "ok", 1), ("begin", "ok", 2),
                  ("abort_txn", "invoke", 2), ("abort_txn", "ok", 2), ("begin", "ok", 3), ("commit_txn", "invoke", 3),
                  ("commit_txn", "ok", 3)]
    assert [op.type for op in history.ops if op.f == "commit"] == ["invoke", "ok"]
    assert [(op.type, op.detail) for op in history.ops if op.f == "init_txn"] == [
        ("invoke", '{"transactional_id": "tx"}'), ("ok", '{"transactional_id": "tx"}')]
