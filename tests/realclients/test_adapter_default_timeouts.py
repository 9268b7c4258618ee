"""A step without a timeout (``Operation.timeout_s=None``: the client's default) must reach the
client as its default, not crash the adapter: kafka-python's and aiokafka's poll paths computed
``None * 1000`` (found by mypy --check-untyped-defs)."""

import pytest

from broker_emu.runtime import run_cluster_in_thread
from conformance.adapters.base import RunEnv
from conformance.model import Operation
from tests.realclients.conftest import require_client

pytestmark = pytest.mark.realclient

POLL_WITHOUT_TIMEOUT = (Operation("poll", {"topic": "t", "partition": 0, "offset": "earliest"}, timeout_s=None),)


def _poll_without_timeout(adapter):
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        return adapter.run_blocking(POLL_WITHOUT_TIMEOUT, RunEnv(tc.bootstrap, "default-timeouts", {}))


def test_kafka_python_poll_without_a_timeout_uses_the_clients_default():
    require_client("kafka-python")
    from conformance.adapters.kafka_python import KafkaPythonAdapter

    [outcome] = _poll_without_timeout(KafkaPythonAdapter())
    assert (outcome.ok, outcome.error_type, outcome.value) == (True, None, 0), outcome.error_message


def test_aiokafka_poll_without_a_timeout_uses_the_clients_default():
    require_client("aiokafka")
    from conformance.adapters.aiokafka import AiokafkaAdapter

    [outcome] = _poll_without_timeout(AiokafkaAdapter())
    assert (outcome.ok, outcome.error_type, outcome.value) == (True, None, 0), outcome.error_message
