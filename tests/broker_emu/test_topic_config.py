"""Topic and broker configs are validated before they are stored: unknown names and bad
values answer INVALID_CONFIG with Kafka's message naming the key and the reason
(``LogConfig.validate``, ``ConfigDef.parseType`` and its validators,
``ReplicationControlManager.createTopics``)."""

from __future__ import annotations

import pytest

from broker_emu.config import ConfigError, broker_config
from broker_emu.runtime import open_cluster
from broker_emu.topic_config import TOPIC_CONFIGS, InvalidConfig, LogRules, validate_topic_configs
from tests.broker_emu.helpers import CREATE_TOPICS, WireClient

INVALID_CONFIG = 40


@pytest.mark.parametrize("name, value, message", [
    ("max.message.bytes", "abc", "Invalid value abc for configuration max.message.bytes: Not a number of type INT"),
    ("max.message.bytes", "2147483648", "Invalid value 2147483648 for configuration max.message.bytes: Not a number of type INT"),
    ("max.message.bytes", "-1", "Invalid value -1 for configuration max.message.bytes: Value must be at least 0"),
    ("min.insync.replicas", "x", "Invalid value x for configuration min.insync.replicas: Not a number of type INT"),
    ("min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ("retention.ms", "1.5", "Invalid value 1.5 for configuration retention.ms: Not a number of type LONG"),
    ("retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ("segment.bytes", "13", "Invalid value 13 for configuration segment.bytes: Value must be at least 14"),
    ("min.cleanable.dirty.ratio", "2", "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ("min.cleanable.dirty.ratio", "half", "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
    ("cleanup.policy", "compact,shred", "Invalid value shred for configuration cleanup.policy: String must be one of: compact, delete"),
    ("message.timestamp.type", "createtime",
     "Invalid value createtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"),
    ("compression.type", "brotli", "Invalid value brotli for configuration compression.type: String must be one of: "
                                   "uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    ("compression.zstd.level", "23", "Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22"),
    ("unclean.leader.election.enable", "yes",
     "Invalid value yes for configuration unclean.leader.election.enable: Expected value to be either true or false"),
    ("leader.replication.throttled.replicas", "0:1,x", "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: "
     "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: "
     "[partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    ("message.format.version", "9.9", "Invalid value 9.9 for configuration message.format.version: Version 9.9 is not a valid version"),
    ("message.timestamp.after.max.ms", "-5", "Invalid value -5 for configuration message.timestamp.after.max.ms: Value must be at least 0"),
    ("shiny.new.option", "1", "Unknown topic config name: shiny.new.option"),
    ("remote.storage.enable", "true", "Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
                                      "with remote log storage."),
])
def test_each_bad_value_is_refused_with_kafkas_message(name, value, message):
    with pytest.raises(InvalidConfig) as err:
        validate_topic_configs({name: value})
    assert str(err.value) == message


def test_valid_values_are_parsed_as_java_does():
    parsed = validate_topic_configs({"max.message.bytes": " +500 ", "cleanup.policy": "compact , delete",
                                     "unclean.leader.election.enable": "TRUE", "message.format.version": "2.8.1",
                                     "leader.replication.throttled.replicas": "*", "compression.gzip.level": "-1",
                                     "min.cleanable.dirty.ratio": "1e-1", "retention.bytes": "-7"})
    assert parsed == {"max.message.bytes": 500, "cleanup.policy": ["compact", "delete"], "unclean.leader.election.enable": True,
                      "message.format.version": "2.8.1", "leader.replication.throttled.replicas": ["*"],
                      "compression.gzip.level": -1, "min.cleanable.dirty.ratio": 0.1, "retention.bytes": -7}
    for key in TOPIC_CONFIGS.values():   # every default is valid
        key.parse(key.default)


def test_cross_key_rules_and_nulls():
    with pytest.raises(InvalidConfig, match=r"^conflict topic config setting min.compaction.lag.ms \(10\) > max.compaction.lag.ms \(5\)$"):
        validate_topic_configs({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    with pytest.raises(InvalidConfig, match="^Null value not supported for topic configs: a,b$"):
        validate_topic_configs({"a": None, "b": None, "max.message.bytes": "1"})


def test_log_rules_take_the_override_then_the_broker_setting_then_kafkas_default():
    broker = broker_config({"message.max.bytes": 5000, "log.message.timestamp.type": "LogAppendTime"})
    rules = LogRules({"min.insync.replicas": "2", "message.timestamp.difference.max.ms": "60000",
                      "message.timestamp.after.max.ms": "10", "cleanup.policy": "compact",
                      "compression.type": "uncompressed"}, broker)
    assert (rules.max_message_bytes, rules.min_insync_replicas, rules.log_append_time) == (5000, 2, True)
    assert (rules.before_max_ms, rules.after_max_ms, rules.compact, rules.compression) == (60000, 10, True, "none")
    assert LogRules({}, broker_config()).compression is None   # producer: keep the client's codec


@pytest.mark.parametrize("overrides, message", [
    ({"min.insync.replicas": 0}, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ({"message.max.bytes": "abc"}, "message.max.bytes must be an integer"),
    ({"log.message.timestamp.type": "Wallclock"}, "String must be one of: CreateTime, LogAppendTime"),
    ({"num.partitions": 0}, "Value must be at least 1"),
    ({"emu.decompressed.max.bytes": -1}, "Value must be at least 0"),
    ({"no.such.setting": 1}, "unknown broker config"),
])
def test_broker_configs_are_validated_at_start(overrides, message):
    with pytest.raises(ConfigError, match=message):
        broker_config(overrides)


async def test_create_topics_answers_invalid_config_naming_the_key(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        w = WireClient(cluster.connect(0))

        async def create(*configs, validate_only=False, name="t"):
            r = await w.call(CREATE_TOPICS, 7, {"timeout_ms": 1000, "validate_only": validate_only, "topics": [
                {"name": name, "num_partitions": 1, "replication_factor": 1,
                 "configs": [{"name": k, "value": v} for k, v in configs]}]})
            return r.topics[0]

        bad = await create(("retention.ms", "soon"))
        assert (bad.error_code, bad.error_message) == (INVALID_CONFIG, "Invalid value soon for configuration retention.ms: "
                                                                       "Not a number of type LONG")
        assert (bad.num_partitions, bad.replication_factor, bad.configs) == (-1, -1, [])
        assert (await create(("retention.msec", "1"))).error_message == "Unknown topic config name: retention.msec"
        assert (await create(("retention.ms", None))).error_message == "Null value not supported for topic configs: retention.ms"
        assert (await create(("segment.ms", "0"), validate_only=True)).error_code == INVALID_CONFIG
        assert not cluster.topics
        ok = await create(("max.message.bytes", " 2000 "), ("cleanup.policy", "compact"))
        assert ok.error_code == 0 and cluster.topics["t"].configs == {"max.message.bytes": " 2000 ", "cleanup.policy": "compact"}
        assert cluster.max_message_bytes("t") == 2000
        exists = await create(("max.message.bytes", "abc"))   # the name is checked before the configs, as Kafka does
        assert exists.error_code == 36


async def test_create_topic_in_python_refuses_bad_configs_too(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        with pytest.raises(InvalidConfig, match="min.insync.replicas"):
            cluster.create_topic("t", 1, 1, configs={"min.insync.replicas": "x"})
        assert "t" not in cluster.topics
