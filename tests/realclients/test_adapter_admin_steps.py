"""The admin steps of the Python clients' adapters (conformance/adapters/admin_steps.py): the
step's deadline is the call's timeout_ms, so a controller slower than the call answers
REQUEST_TIMED_OUT at that deadline, reported as Kafka's TimeoutException, and creates nothing;
delete_records moves the low watermark. And aiokafka's join_group_held cell: its JoinGroup is an
ordinary request under request_timeout_ms, so it abandons the held join (docs/findings.md), and
Sarama's, under Net.ReadTimeout; the Java client's (classic protocol) waits it out, and its
group.protocol=consumer column, which sends no JoinGroup, stays out of the cell. And
confluent-kafka's share consumer telling the share family's stories."""

import importlib
import os

import pytest

from broker_emu.runtime import run_cluster_in_thread
from conformance.adapters.base import RunEnv
from conformance.model import Operation, Status
from tests.realclients.conftest import require_client

pytestmark = pytest.mark.realclient

CLIENTS = {
    "confluent-kafka": ("conformance.adapters.confluent", "ConfluentAdapter"),
    "kafka-python": ("conformance.adapters.kafka_python", "KafkaPythonAdapter"),
    "aiokafka": ("conformance.adapters.aiokafka", "AiokafkaAdapter"),
}


def _adapter(client):
    require_client(client)
    module, name = CLIENTS[client]
    return getattr(importlib.import_module(module), name)()


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_create_topics_past_the_controller_deadline_is_a_timeout_and_creates_nothing(client):
    adapter = _adapter(client)
    steps = (Operation("create_topics", {"topic": "late", "partitions": 1, "replication_factor": 1}, timeout_s=0.5),
             Operation("create_topics", {"topic": "in-time", "partitions": 1, "replication_factor": 1}, timeout_s=5.0))
    with run_cluster_in_thread(brokers=1, config={"emu.controller.delay.ms": 1500}) as tc:
        late, in_time = adapter.run_blocking(steps, RunEnv(tc.bootstrap, f"admin-{client}", {}))
        topics = tc.call(lambda: set(tc.cluster.topics))
    assert (late.ok, late.error_type) == (False, "TimeoutException"), late.error_message
    assert 0.4 < late.elapsed_s < 1.4
    assert in_time.ok, in_time.error_message
    assert "late" not in topics and "in-time" in topics


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_delete_records_moves_the_low_watermark(client):
    adapter = _adapter(client)
    steps = (Operation("produce", {"topic": "t", "partition": 0, "value": b"v", "count": 3}),
             Operation("delete_records", {"topic": "t", "partition": 0, "offset": 2}, timeout_s=5.0))
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        produced, deleted = adapter.run_blocking(steps, RunEnv(tc.bootstrap, f"delete-{client}", {"acks": "all"}))
        low = tc.call(lambda: tc.cluster.topics["t"].partitions[0].log.log_start_offset)
    assert produced.ok and deleted.ok, deleted.error_message
    assert low == 2
    if client != "kafka-python":   # its value is the call's whole answer, as text
        assert deleted.value == 2


def test_aiokafka_abandons_a_held_join_group_at_its_request_timeout():
    """server.joingroup-held: the coordinator holds the second member's JoinGroup until the silent
    first member's session ends (20 s); aiokafka gives up on it at request_timeout_ms (10 s: 333 ms
    scaled), closes the connection and joins again (then it gets its assignment)."""
    from conformance.runner import Plan, run_plan
    from conformance.scenarios import BY_ID

    [result] = run_plan(Plan([BY_ID["server.joingroup-held"]], [_adapter("aiokafka")]))
    verdicts = {name: (status, detail) for name, status, detail in result.contracts}
    assert verdicts["join_group_held outcome"][0] is Status.PASS
    status, detail = verdicts["JoinGroup held without a client disconnect"]
    assert status is Status.FAIL and "into the wait" in detail, detail


def test_sarama_abandons_a_held_join_group_at_net_read_timeout():
    """The same cell for Sarama (its program's join_group_held, group.go): every request, JoinGroup
    included, is read under Net.ReadTimeout (request.timeout.ms, 333 ms scaled), so the held join is
    dropped and Consume, called again, joins on a new connection once the silent member is expelled."""
    from conformance.adapters.go_clients import SaramaAdapter
    from conformance.runner import Plan, run_plan
    from conformance.scenarios import BY_ID

    adapter = SaramaAdapter()
    ok, why = adapter.available()
    if not ok:   # as require_client: CI must run it
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    try:
        [result] = run_plan(Plan([BY_ID["server.joingroup-held"]], [adapter]))
    finally:
        adapter.shutdown()
    verdicts = {name: (status, detail) for name, status, detail in result.contracts}
    assert verdicts["join_group_held outcome"][0] is Status.PASS, verdicts
    status, detail = verdicts["JoinGroup held without a client disconnect"]
    assert status is Status.FAIL and "into the wait" in detail, detail
    waited = float(detail.split(" ms into the wait")[0].rsplit(" ", 1)[1])
    # about Net.ReadTimeout (10 s / 10: the scenario's max_scale), well short of the 20 s session (2 s)
    assert 800 <= waited < 1800, detail


def test_java_waits_out_a_held_join_group():
    """The same cell for the Java client (JoinGroupHeld.java, group.protocol=classic): it reads
    JoinGroup for max.poll.interval.ms + 5 s (AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE), so the
    held join is answered on its connection when the coordinator expels the silent member."""
    from conformance.adapters.java_client import JavaAdapter
    from conformance.runner import Plan, run_plan
    from conformance.scenarios import BY_ID
    from tests.realclients.clients import require_adapter

    adapter = JavaAdapter()
    require_adapter(adapter)
    try:
        [result] = run_plan(Plan([BY_ID["server.joingroup-held"]], [adapter]))
    finally:
        adapter.shutdown()
    verdicts = {name: (status, detail) for name, status, detail in result.contracts}
    assert result.status is Status.PASS, verdicts
    detail = verdicts["JoinGroup held without a client disconnect"][1]
    held_s = float(detail.split("JoinGroup held ")[1].split(" ")[0])
    # past request.timeout.ms (10 s / 10, the scenario's max_scale), ended by the 20 s session (2 s)
    assert 1.0 < held_s <= 2.5, detail


def test_java_consumer_protocol_has_no_join_group_to_hold():
    """Under group.protocol=consumer kafka-clients joins by ConsumerGroupHeartbeat: the cell is N/A
    and says so, and the program, asked anyway, refuses rather than time another protocol's join."""
    from conformance.adapters.java_client import JavaConsumerProtocolAdapter
    from conformance.scenarios import BY_ID
    from tests.realclients.clients import require_adapter

    adapter = JavaConsumerProtocolAdapter(broker_has_kip848=True)
    ok, why = adapter.supports_scenario(BY_ID["server.joingroup-held"])
    assert not ok and "sends no JoinGroup" in why, why
    require_adapter(adapter)
    try:
        # no broker is needed: the step refuses before it builds a consumer
        [outcome] = adapter.run_blocking((Operation("join_group_held", {}, 5.0),), RunEnv("127.0.0.1:9", "j848", {}))
    finally:
        adapter.shutdown()
    assert (outcome.ok, outcome.error_type) == (False, "IllegalArgumentException"), outcome
    assert "group.protocol=consumer" in (outcome.error_message or ""), outcome


def test_confluent_kafkas_share_consumer_runs_the_share_stories():
    """librdkafka 2.16's share consumer (a preview) told the share stories (conformance/adapters/
    confluent_share.py): the record held past its lock goes to the other member with delivery count 2
    at the lock's expiry, judged by the same contracts as Java's and ours; RENEW, which it lacks, is
    N/A with the reason."""
    from conformance.runner import Plan, run_plan
    from conformance.scenarios import BY_ID

    adapter = _adapter("confluent-kafka")
    done, renew = run_plan(Plan([BY_ID["share.lock-expires-redelivered"], BY_ID["share.renew-keeps-the-lock"]], [adapter]))
    assert done.status is Status.PASS, done.contracts
    assert renew.status is Status.NA and "no RENEW" in renew.message
