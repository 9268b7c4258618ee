"""transactional.id.expiration.ms and producer.id.expiration.ms in virtual time: each is applied
at its own check (transaction.remove.expired.transaction.cleanup.interval.ms,
producer.id.expiration.check.interval.ms), never to an open transaction, and what forgetting
means to the producer that comes back."""

import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.protocol.records import Record, encode_batch
from tests.broker_emu.transactions.helpers import INIT, add, coordinator, end, init, produce, txn_batch
from tests.broker_emu.wire import WireClient

INVALID_MAPPING = 49


def idempotent_batch(cluster, pid: int, epoch: int, seq: int) -> bytes:
    return encode_batch([Record(b"v", timestamp=cluster.wall_ms())], producer_id=pid, producer_epoch=epoch, base_sequence=seq)


async def test_a_quiet_producer_is_forgotten_at_the_first_check_past_its_expiration(autojump_clock):
    config = {"producer.id.expiration.ms": 60_000, "producer.id.expiration.check.interval.ms": 25_000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(INIT, 4, {"transactional_id": None, "transaction_timeout_ms": 0, "producer_id": -1, "producer_epoch": -1})
        batch = idempotent_batch(cluster, r.producer_id, r.producer_epoch, 0)
        assert (await produce(w, "t", 0, batch)).base_offset == 0
        await trio.sleep(60)
        # checks at 25 s and 50 s: not yet 60 s old; a retry is still the duplicate it is
        assert (await produce(w, "t", 0, batch)).base_offset == 0
        await trio.sleep(20)
        (expired,) = cluster.trace.query(kind=Kind.PRODUCER_EXPIRED)
        assert (expired.t_ms, expired.details["producer_ids"]) == (75_000.0, [r.producer_id])
        # forgotten: the same batch is taken as new and written again
        assert (await produce(w, "t", 0, batch)).base_offset == 1


async def test_the_defaults_are_a_day_checked_every_ten_minutes(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(INIT, 4, {"transactional_id": None, "transaction_timeout_ms": 0, "producer_id": -1, "producer_epoch": -1})
        assert (await produce(w, "t", 0, idempotent_batch(cluster, r.producer_id, 0, 0))).error_code == 0
        await trio.sleep(86_400 + 600)
        assert [e.t_ms for e in cluster.trace.query(kind=Kind.PRODUCER_EXPIRED)] == [86_400_000.0]


async def test_a_producer_with_a_transaction_open_is_kept(autojump_clock):
    config = {"producer.id.expiration.ms": 60_000, "producer.id.expiration.check.interval.ms": 10_000,
              "transaction.max.timeout.ms": 900_000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        w = await coordinator(cluster, "tx")
        r = await init(w, "tx", timeout_ms=900_000)
        assert await add(w, "tx", r.producer_id, r.producer_epoch, [("t", 0)]) == [0]
        batch = encode_batch([Record(b"v", timestamp=cluster.wall_ms())], producer_id=r.producer_id,
                             producer_epoch=r.producer_epoch, base_sequence=0, transactional=True)
        assert (await produce(WireClient(cluster.connect(0)), "t", 0, batch)).error_code == 0
        await trio.sleep(120)
        assert cluster.trace.query(kind=Kind.PRODUCER_EXPIRED) == []
        assert await end(w, "tx", r.producer_id, r.producer_epoch, commit=True) == 0
        await trio.sleep(70)   # the marker's timestamp is the producer's last: 60 s after it
        assert [e.details["producer_ids"] for e in cluster.trace.query(kind=Kind.PRODUCER_EXPIRED)] == [[r.producer_id]]


async def test_an_unused_transactional_id_expires_and_its_producer_id_with_it(autojump_clock):
    config = {"transactional.id.expiration.ms": 60_000, "transaction.remove.expired.transaction.cleanup.interval.ms": 25_000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        w = await coordinator(cluster, "tx")
        r = await init(w, "tx")
        assert await add(w, "tx", r.producer_id, r.producer_epoch, [("t", 0)]) == [0]
        assert await end(w, "tx", r.producer_id, r.producer_epoch, commit=True) == 0
        await trio.sleep(70)
        assert cluster.txn.describe("tx") is not None   # checks at 25 s and 50 s: not 60 s unused yet
        await trio.sleep(10)
        (dead,) = [e for e in cluster.trace.query(kind=Kind.TXN_STATE) if e.details["to"] == "Dead"]
        assert (dead.t_ms, dead.details["from"]) == (75_000.0, "CompleteCommit")
        assert await add(w, "tx", r.producer_id, r.producer_epoch, [("t", 0)]) == [INVALID_MAPPING]
        again = await init(w, "tx")
        assert again.error_code == 0 and again.producer_id != r.producer_id


async def test_an_open_transaction_keeps_its_id(autojump_clock):
    config = {"transactional.id.expiration.ms": 60_000, "transaction.remove.expired.transaction.cleanup.interval.ms": 10_000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        w = await coordinator(cluster, "tx")
        r = await init(w, "tx", timeout_ms=900_000)
        assert await add(w, "tx", r.producer_id, r.producer_epoch, [("t", 0)]) == [0]
        await trio.sleep(300)
        assert cluster.txn.describe("tx").state.value == "Ongoing"
        assert (await produce(WireClient(cluster.connect(0)), "t", 0,
                              txn_batch(r.producer_id, r.producer_epoch, 0, [b"a"]))).error_code == 0
