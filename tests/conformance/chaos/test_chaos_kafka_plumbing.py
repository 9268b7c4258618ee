"""`broker-emu chaos --broker kafka` without a Kafka: the plan it draws, each fault kind applied
through fakes of the harness and the admin and the proxy's own fault engine (which validates
every rule), the read-back of the logs over the wire (checked against the emulator's logs, over
TCP), and the command line's refusals. tests/realkafka/test_chaos_on_kafka.py runs a seed on
Apache Kafka itself."""

from __future__ import annotations

import contextlib
import time
from types import SimpleNamespace

import pytest
import trio

import client
from broker_emu.faults.engine import FaultEngine
from conformance.chaos import kafka_faults, on_kafka, realtime
from conformance.chaos.accounting import Sent
from conformance.chaos.cli import replay_command, seed_runner
from conformance.chaos.kafka_faults import KAFKA_KINDS, NOT_ON_KAFKA, KafkaChaos
from conformance.chaos.kafka_readback import committed_on_kafka
from conformance.chaos.kits import KITS
from conformance.chaos.on_kafka import run_kit_seed
from conformance.chaos.ours import TOPIC
from conformance.chaos.plan import KINDS, Plan, Step, make_plan
from conformance.chaos.readback import committed
from conformance.chaos.realtime import Kit
from conformance.chaos.realtime_txn import TxnKit
from conformance.main import main


def test_the_kafka_plan_draws_only_kinds_kafka_can_be_given_and_says_why_not_the_others():
    drawn = set()
    for seed in range(60):
        plan = make_plan(seed, "chaos", 30.0, mean_gap=3.0, kinds=KAFKA_KINDS)
        drawn |= {s.kind for s in plan.steps}
    assert drawn == set(KAFKA_KINDS)
    assert set(KINDS) <= set(KAFKA_KINDS) | set(NOT_ON_KAFKA) and not set(KAFKA_KINDS) & set(NOT_ON_KAFKA)
    # the emulator's plans are drawn as before: its seeds replay
    assert make_plan(7, "chaos", 8.0) == make_plan(7, "chaos", 8.0, kinds=KINDS)


class FakeNode:
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.ports = SimpleNamespace(broker_port=9000 + node_id)
        self.alive, self.paused = True, False
        self.proc = SimpleNamespace(kill=self._kill, wait=lambda timeout: 0)

    def _kill(self) -> None:
        self.alive = False

    def running(self) -> bool:
        return self.alive

    def start(self) -> None:
        self.alive = True

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False


class FakeKafka:
    def __init__(self) -> None:
        self.nodes = [FakeNode(i) for i in (1, 2, 3)]
        self.ready_waits = 0

    def node(self, node_id: int) -> FakeNode:
        return self.nodes[node_id - 1]

    def wait_ready(self, deadline: float) -> None:
        assert all(n.alive and not n.paused for n in self.nodes)
        self.ready_waits += 1


class FakeProxy:
    def __init__(self) -> None:
        self.faults = FaultEngine(seed=0, brokers={1, 2, 3}, clock=lambda: 0.0)   # parses every rule as the proxy does
        self.stopped: set[int] = set()

    def now_ms(self) -> float:
        return 0.0

    async def stop_broker(self, node_id: int) -> None:
        self.stopped.add(node_id)

    async def start_broker(self, node_id: int) -> None:
        self.stopped.discard(node_id)


class FakeAdmin:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    async def alter_partition_reassignments(self, targets, timeout=None):
        self.calls.append(("reassign", dict(targets)))
        return {tp: None for tp in targets}

    async def elect_leaders(self, partitions, timeout=None):
        self.calls.append(("elect", list(partitions)))
        return {tp: None for tp in partitions}


@pytest.fixture
def metadata(monkeypatch):
    """Partition 0 led by node 1, replicas 1 2 3, all in sync, as a node's Metadata says."""
    part = SimpleNamespace(partition_index=0, leader_id=1, replica_nodes=[1, 2, 3], isr_nodes=[1, 2, 3])
    meta = SimpleNamespace(topics=[SimpleNamespace(partitions=[part])])
    monkeypatch.setattr(kafka_faults.wire, "metadata", lambda host, port, topics, timeout=5.0: meta)


@pytest.mark.parametrize("kind", sorted(KAFKA_KINDS))
async def test_each_kind_acts_through_the_harness_the_proxy_or_the_admin_and_is_healed(kind, metadata, autojump_clock):
    kafka, proxy, admin = FakeKafka(), FakeProxy(), FakeAdmin()
    plan = Plan(3, "chaos", [Step(0.5, kind, 1000.0, 0.4)])   # healed long after the checks below
    fired = trio.Event()
    chaos = KafkaChaos(kafka, proxy, admin, plan, lambda line: fired.set())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(chaos.run)
        await fired.wait()          # the step fired (signals and Metadata go through a worker thread)
        note = plan.steps[0].note
        assert note and not note.startswith("skipped"), note
        node = kafka.node(2)        # draw 0.4 of nodes 1-3
        rules = [r.action.type for r in proxy.faults.rules.values()]
        expected = {"bounce": lambda: not node.alive, "pause": lambda: node.paused,
                    "isolate": lambda: proxy.stopped == {2},
                    "black_hole": lambda: rules == ["black_hole"], "lost_answer": lambda: rules == ["close_after"],
                    "lost_request": lambda: rules == ["close_before"], "delay": lambda: rules == ["delay_response"],
                    "leader": lambda: [c[0] for c in admin.calls] == ["reassign", "elect"]
                    and admin.calls[0][1][("chaos", 0)][0] in (2, 3)}
        assert expected[kind](), (kind, note, rules, admin.calls)
        nursery.cancel_scope.cancel()
    await chaos.heal_all()
    assert all(n.alive and not n.paused for n in kafka.nodes) and not proxy.stopped and not proxy.faults.rules
    assert kafka.ready_waits == 1 and chaos.plan.counts() == {kind: 1}


async def test_one_node_down_at_a_time(metadata, autojump_clock):
    kafka, proxy, admin = FakeKafka(), FakeProxy(), FakeAdmin()
    plan = Plan(3, "chaos", [Step(0.5, "bounce", 5.0, 0.1), Step(1.0, "pause", 1.0, 0.9)])
    await KafkaChaos(kafka, proxy, admin, plan).run()
    assert plan.steps[1].note.startswith("skipped: node 1 is already down")
    assert all(n.alive and not n.paused for n in kafka.nodes)


def test_the_read_back_over_the_wire_is_what_the_logs_hold():
    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(brokers=3, topics=[("t", 2, 3)]) as tc:
        with client.Producer({"bootstrap.servers": tc.bootstrap, "acks": "all", "enable.idempotence": True}) as p:
            for i in range(40):
                p.send("t", b"v%d" % i, partition=i % 2)
            assert p.flush(30) == 0
        ports = tc.call(lambda: {b.id: b.port for b in tc.cluster.brokers.values()})
        truth = tc.call(committed, tc.cluster, "t")
        read, ends = committed_on_kafka(ports, "t", 2)
    assert read == truth and len(read) == 40 and ends == {0: 20, 1: 20}
    assert all(s.producer_id >= 0 and s.producer_epoch == 0 for s in read.values())


def test_the_command_line_refuses_what_kafka_cannot_run(capsys):
    for client_name in ("ours", "confluent-kafka", "java"):
        assert main(["chaos", "--broker", "kafka", "--client", client_name, "--plant", "lose-ack"]) == 2
        assert "the plants are the emulator's" in capsys.readouterr().err
    assert main(["chaos", "--broker", "kafka", "--client", "kafka-python", "--txn"]) == 2
    assert "the clients with a transactional kit" in capsys.readouterr().err
    with pytest.raises(ValueError, match="Apache Kafka has none to plant"):   # before any JVM starts
        run_kit_seed(KITS["confluent-kafka"], 0, plant="lose-ack")
    params = dict(duration=30.0, interval=0.05, producers=3, partitions=3, broker="kafka", txn=True)
    assert replay_command("ours", params, 4).startswith("broker-emu chaos --client ours --broker kafka --seeds 1")


def test_a_kit_on_kafka_is_the_same_kit_and_driver(monkeypatch):
    monkeypatch.setattr("conformance.realkafka.install.check_installed", lambda version=None: None)
    run, why = seed_runner("confluent-kafka", "kafka")
    assert not why and run.func is run_kit_seed and run.args == (KITS["confluent-kafka"],)
    assert seed_runner("ours", "kafka")[0] is on_kafka.run_seed


class OurProducer:
    """A kit's producer made of our blocking client: the driver needs no third-party client here."""

    def __init__(self, index: int, bootstrap: str, errors: list[str], settings: dict) -> None:
        self.producer = client.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "request.timeout.ms": 3000,
                                         "retry.backoff.ms": 50, "metadata.max.age.ms": 2000, **settings})

    def send(self, record: Sent, value: bytes) -> None:
        def done(future) -> None:
            error = future.exception(0)
            if error is not None:
                record.settle(error=repr(error))
            else:
                record.settle(offset=future.result(0).offset)
        self.producer.send(TOPIC, value, partition=record.partition).add_done_callback(done)

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def finish(self, settle_s: float) -> None:
        self.producer.flush(settle_s)
        self.producer.close()


class OurConsumer:
    def __init__(self, bootstrap: str, partitions: int, errors: list[str]) -> None:
        self.consumer = client.Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                                         "enable.auto.commit": False, "fetch.max.wait.ms": 100})
        self.consumer.assign([(TOPIC, p) for p in range(partitions)])

    def poll(self, timeout_s: float):
        return [(r.partition, r.offset, r.value) for r in self.consumer.poll(timeout_s)]

    def close(self) -> None:
        self.consumer.close()


class EmulatedKafka:
    """The emulator dressed as conformance/realkafka's KafkaCluster: nodes with their broker ports
    (the read-back's Fetch and Metadata go there), ready at once."""

    def __init__(self, tc) -> None:
        self.bootstrap = tc.bootstrap
        self.nodes = [SimpleNamespace(node_id=b.id, ports=SimpleNamespace(broker_port=b.port))
                      for b in tc.cluster.brokers.values()]

    def wait_ready(self, deadline: float) -> None:
        pass


def test_a_kit_seed_on_kafka_runs_through_the_proxy_and_reads_the_logs_back(monkeypatch):
    """The Kafka target with the emulator standing in for the JVMs: the kit reaches it through the
    proxy, the proxy's faults fire and heal, the logs are read back over the wire, the history
    is checked. (Node kills, pauses and leader moves need a real Kafka: the plan here draws only
    the proxy's kinds; tests/realkafka/test_chaos_on_kafka.py runs a seed on Kafka itself.)"""
    from broker_emu.runtime import run_cluster_in_thread

    @contextlib.contextmanager
    def emulated(partitions: int, txn: bool):
        with run_cluster_in_thread(brokers=3, topics=[(TOPIC, partitions, 3)]) as tc:
            yield EmulatedKafka(tc)
    monkeypatch.setattr(on_kafka, "fresh_kafka", emulated)
    monkeypatch.setattr(on_kafka, "KAFKA_KINDS", {"black_hole": 1, "lost_answer": 2, "delay": 1})
    kit = Kit("ours-kit", lambda: (True, ""), OurProducer, OurConsumer)
    r = run_kit_seed(kit, 2, duration=6.0, partitions=2, producers=2, interval=0.05)
    assert not r.error and not r.notes, r.notes
    assert r.actions and set(r.actions) <= {"black_hole", "lost_answer", "delay"}, r.executed
    t = r.accounting.totals()
    assert t["sent"] > 50 and t["acked"] == t["sent"] and not t["unresolved"], (t, r.notes)
    assert r.bad() == 0 and r.check is not None and not r.check.named(), (t, r.consumer, r.check.as_dict())
    assert {op.f for op in r.history.ops} >= {"send", "poll"}   # the history was recorded without asking


def test_a_transactional_seed_that_committed_no_transaction_is_an_error():
    """A program built before its transactional commands answers 'unknown cmd': the seed's
    default workload passes, but it tested no transaction, and says so."""
    def unknown(*args):
        raise RuntimeError("java program: unknown cmd chaos_txn_producer")
    kit = Kit("ours-kit", lambda: (True, ""), OurProducer, OurConsumer, TxnKit(unknown, unknown))
    r = realtime.run_seed(kit, 2, duration=2.0, partitions=1, producers=1, interval=0.05, txn=True)
    assert r.accounting.totals()["acked"] > 10 and r.error.startswith("the transactional load committed no"), r.notes
    assert "unknown cmd" in r.error and r.bad()
