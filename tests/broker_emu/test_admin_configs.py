"""AlterConfigs and IncrementalAlterConfigs (ConfigAdminManager.preprocess, ConfigurationControlManager,
ControllerConfigurationValidator): topic and broker configs change, take effect on the next
Produce, show in DescribeConfigs with their source, and are refused with Kafka's errors."""

import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.protocol import ApiKey
from tests.broker_emu.wire import WireClient, produce_body

INC, LEGACY, DESCRIBE = ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.DESCRIBE_CONFIGS
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC, BROKER = 2, 4


async def _inc(w, resources, validate_only=False):
    body = {"resources": [{"resource_type": t, "resource_name": n, "configs": [
        {"name": k, "config_operation": op, "value": v} for k, op, v in configs]} for t, n, configs in resources],
        "validate_only": validate_only}
    r = await w.call(INC, 1, body)
    return [(x.error_code, x.error_message) for x in r.responses]


async def _legacy(w, resources):
    body = {"resources": [{"resource_type": t, "resource_name": n, "configs": [{"name": k, "value": v} for k, v in configs]}
                          for t, n, configs in resources], "validate_only": False}
    r = await w.call(LEGACY, 2, body)
    return [(x.error_code, x.error_message) for x in r.responses]


async def _described(w, rtype, name, keys=None):
    r = await w.call(DESCRIBE, 4, {"resources": [{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
                                   "include_synonyms": False, "include_documentation": False})
    return {c.name: (c.value, c.config_source) for c in r.results[0].configs}


async def _produce(cluster, size, acks=1):
    leader = cluster.partition("t", 0).leader
    r = await WireClient(cluster.connect(leader)).call(ApiKey.PRODUCE, 9, produce_body("t", 0, [b"x" * size], acks=acks,
                                                                                       timeout_ms=1000))
    return r.responses[0].partition_responses[0].error_code


async def test_a_topic_override_takes_effect_on_the_next_produce_and_goes_away_with_delete(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        assert await _produce(cluster, 5000) == 0
        assert await _inc(w, [(TOPIC, "t", [("max.message.bytes", SET, "2000")])]) == [(0, None)]
        assert await _produce(cluster, 5000) == 10                             # MESSAGE_TOO_LARGE
        assert (await _described(w, TOPIC, "t", ["max.message.bytes"]))["max.message.bytes"] == ("2000", 1)
        assert await _inc(w, [(TOPIC, "t", [("max.message.bytes", DELETE, None)])]) == [(0, None)]
        assert await _produce(cluster, 5000) == 0
        assert (await _described(w, TOPIC, "t", ["max.message.bytes"]))["max.message.bytes"] == ("1048588", 5)


async def test_min_insync_replicas_raised_at_run_time_refuses_acks_all(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"replica.lag.time.max.ms": 1000}) as cluster:
        w = WireClient(cluster.connect(0))
        p = cluster.partition("t", 0)
        await cluster.stop_broker(next(r for r in p.replicas if r != p.leader))
        assert await _produce(cluster, 10, acks=-1) == 0                        # 2 in sync, min 1
        assert await _inc(w, [(TOPIC, "t", [("min.insync.replicas", SET, "3")])]) == [(0, None)]
        assert await _produce(cluster, 10, acks=-1) == 19                       # NOT_ENOUGH_REPLICAS


async def test_list_operations_validate_only_and_kafkas_refusals(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        assert await _inc(w, [(TOPIC, "t", [("cleanup.policy", APPEND, "compact")])]) == [(0, None)]
        assert cluster.topics["t"].configs == {"cleanup.policy": "delete,compact"}   # from the default
        assert await _inc(w, [(TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete")])]) == [(0, None)]
        assert cluster.topics["t"].configs == {"cleanup.policy": "compact"}
        assert await _inc(w, [(TOPIC, "t", [("retention.ms", SET, "1")])], validate_only=True) == [(0, None)]
        assert "retention.ms" not in cluster.topics["t"].configs
        got = await _inc(w, [
            (TOPIC, "t", [("retention.ms", APPEND, "1")]),
            (TOPIC, "nope", [("retention.ms", SET, "1")]),
            (TOPIC, "", [("retention.ms", SET, "1")]),
            (TOPIC, "t2", [("retention.ms", SET, "x")]),
            (TOPIC, "t3", [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)]),
            (TOPIC, "t4", [("retention.ms", SET, None)]),
            (TOPIC, "t5", [("no.such.config", SET, "1")]),
        ])
        assert got == [
            (40, "Can't APPEND to key retention.ms because its type is not LIST."),
            (3, "The topic 'nope' does not exist."),
            (42, "Default topic resources are not allowed."),
            (40, "Invalid value x for configuration retention.ms: Not a number of type LONG"),
            (42, "Error due to duplicate config keys"),
            (42, "Null value not supported for : retention.ms"),
            (40, "Unknown topic config name: no.such.config"),
        ]
        twice = await _inc(w, [(TOPIC, "t", [("retention.ms", SET, "1")]), (TOPIC, "t", [("retention.ms", SET, "2")])])
        assert twice == [(42, "Each resource must appear at most once.")] * 2


async def test_legacy_alter_configs_replaces_the_overrides_whole(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        await _inc(w, [(TOPIC, "t", [("retention.ms", SET, "1000"), ("max.message.bytes", SET, "2000")])])
        assert await _legacy(w, [(TOPIC, "t", [("retention.ms", "5000")])]) == [(0, None)]
        assert cluster.topics["t"].configs == {"retention.ms": "5000"}          # max.message.bytes went back


async def test_broker_settings_change_at_run_time_for_topics_without_their_own(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(1))
        assert await _inc(w, [(BROKER, "", [("message.max.bytes", SET, "2000")])]) == [(0, None)]
        assert await _produce(cluster, 5000) == 10                               # the cluster-wide value applies
        assert (await _described(w, BROKER, "1", ["message.max.bytes"]))["message.max.bytes"] == ("2000", 3)
        assert (await _described(w, BROKER, ""))["message.max.bytes"] == ("2000", 3)
        assert (await _described(w, TOPIC, "t", ["max.message.bytes"]))["max.message.bytes"] == ("2000", 3)
        assert await _inc(w, [(BROKER, "1", [("message.max.bytes", SET, "9000")])]) == [(0, None)]
        assert await _produce(cluster, 5000) == 0                                # the broker's own wins
        assert (await _described(w, BROKER, "1", ["message.max.bytes"]))["message.max.bytes"] == ("9000", 2)
        assert await _inc(w, [(BROKER, "1", [("message.max.bytes", DELETE, None)]),
                              (BROKER, "", [("message.max.bytes", DELETE, None)])]) == [(0, None), (0, None)]
        assert await _produce(cluster, 5000) == 0
        assert (await _described(w, BROKER, "1", ["message.max.bytes"]))["message.max.bytes"] == ("1048588", 5)
        got = await _inc(w, [(BROKER, "2", [("message.max.bytes", SET, "1")]), (BROKER, "x", [("message.max.bytes", SET, "1")]),
                             (BROKER, "", [("num.partitions", SET, "3"), ("auto.create.topics.enable", SET, "false")])])
        assert got == [(42, "Unexpected broker id, expected 1, but received 2"),
                       (42, "Node id must be an integer, but it is: x"),
                       (42, "Cannot update these configs dynamically: [num.partitions, auto.create.topics.enable]")]
        assert await _inc(w, [(BROKER, "", [("message.max.bytes", SET, "big")])]) == [
            (42, "Invalid value big for configuration message.max.bytes: Not a number of type INT")]


async def test_describe_configs_synonyms_list_every_level_in_force_order(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"message.max.bytes": 500000}) as cluster:
        w = WireClient(cluster.connect(0))
        await _inc(w, [(BROKER, "", [("message.max.bytes", SET, "400000")]), (TOPIC, "t", [("max.message.bytes", SET, "300000")])])
        r = await w.call(DESCRIBE, 4, {"resources": [{"resource_type": TOPIC, "resource_name": "t",
                                                      "configuration_keys": ["max.message.bytes"]}],
                                       "include_synonyms": True, "include_documentation": False})
        [c] = r.results[0].configs
        assert [(s.name, s.value, s.source) for s in c.synonyms] == [
            ("max.message.bytes", "300000", 1), ("message.max.bytes", "400000", 3),
            ("message.max.bytes", "500000", 4), ("message.max.bytes", "1048588", 5)]


async def test_admin_writes_meet_krafts_controller_deadline(autojump_clock):
    """timeout_ms is the controller's deadline (ControllerRequestContext): past it the request is
    REQUEST_TIMED_OUT and nothing changes; timeout_ms 0 always (as Kafka 4.4 answers)."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.controller.delay.ms": 2000}) as cluster:
        w = WireClient(cluster.connect(0))

        def create(name, timeout_ms):
            return {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                                "configs": []}], "timeout_ms": timeout_ms, "validate_only": False}

        start = cluster.now_ms()
        r = await w.call(ApiKey.CREATE_TOPICS, 7, create("late", 1500))
        assert (r.topics[0].error_code, r.topics[0].error_message, cluster.now_ms() - start) == (7, None, 1500)
        assert "late" not in cluster.topics                                     # never applied
        start = cluster.now_ms()
        r = await w.call(ApiKey.CREATE_TOPICS, 7, create("in-time", 2000))
        assert (r.topics[0].error_code, cluster.now_ms() - start) == (0, 2000)
        assert "in-time" in cluster.topics
        r = await w.call(ApiKey.CREATE_PARTITIONS, 3, {"topics": [{"name": "t", "count": 3, "assignments": None}],
                                                      "timeout_ms": 0, "validate_only": False})
        assert (r.results[0].error_code, len(cluster.topics["t"].partitions)) == (7, 1)
        r = await w.call(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": "t", "topic_id": None}], "topic_names": [],
                                                   "timeout_ms": 100})
        assert (r.responses[0].error_code, "t" in cluster.topics) == (7, True)
        deadlines = cluster.trace.query(kind=Kind.CONTROLLER_DEADLINE)
        assert [(e.details["api"], e.details["timeout_ms"]) for e in deadlines] == [
            ("CreateTopics", 1500), ("CreatePartitions", 0), ("DeleteTopics", 100)]


async def test_describe_log_dirs_reports_each_replicas_bytes_and_lag(autojump_clock):
    config = {"replica.lag.time.max.ms": 1_000_000}
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=config) as cluster:
        p = cluster.partition("t", 0)
        follower = next(r for r in p.replicas if r != p.leader)
        cluster.set_replication("t", 0, follower, "stall")
        p.isr = [r for r in p.isr if r != follower]      # out of the ISR: the HW goes on without it
        await _produce(cluster, 1000)
        await trio.sleep(1)
        for broker in (p.leader, follower):
            r = await WireClient(cluster.connect(broker)).call(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})
            [d] = r.results
            [part] = d.topics[0].partitions
            assert d.log_dir == f"/broker-emu/broker-{broker}" and d.total_bytes > d.usable_bytes > 0
            if broker == p.leader:
                assert part.partition_size > 1000 and part.offset_lag == 0
            else:                                  # stalled: it copied nothing and lags the HW by the record
                assert (part.partition_size, part.offset_lag) == (0, 1)
        r = await WireClient(cluster.connect(0)).call(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": [{"topic": "nope", "partitions": [0]}]})
        assert r.results[0].topics == []
