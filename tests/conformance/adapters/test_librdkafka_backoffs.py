"""librdkafka refuses reconnect.backoff.max.ms below reconnect.backoff.ms (100 ms by default):
a scenario's scaled cap (1 s / 30 = 33 ms) must bring the base down with it, in confluent-kafka's
configuration and in kcat's -X arguments. Created for real: librdkafka validates at construction."""

from __future__ import annotations

from conformance.adapters.base import RunEnv
from conformance.adapters.confluent import ConfluentAdapter
from conformance.adapters.kcat import _passed_through


def test_a_scaled_backoff_cap_brings_the_base_under_it_for_confluent_kafka():
    from confluent_kafka import Producer

    env = RunEnv("127.0.0.1:1", "c", {"reconnect.backoff.max.ms": 33}, scale=30.0)
    conf = ConfluentAdapter()._common(env)
    assert conf["reconnect.backoff.ms"] <= conf["reconnect.backoff.max.ms"] == 33
    Producer(conf).flush(0)   # librdkafka accepts it (it raised _INVALID_ARG before)
    named = ConfluentAdapter()._common(RunEnv("127.0.0.1:1", "c", {"reconnect.backoff.ms": 5,
                                                                    "reconnect.backoff.max.ms": 33}, scale=30.0))
    assert named["reconnect.backoff.ms"] == 5   # a base the scenario names is kept


def test_a_scaled_backoff_cap_brings_the_base_under_it_for_kcat():
    args = _passed_through({"reconnect.backoff.max.ms": 33})
    assert args == ["-X", "reconnect.backoff.ms=33", "-X", "reconnect.backoff.max.ms=33"]
