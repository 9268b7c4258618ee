"""Client quotas (ClientQuotaManager, ClientQuotaControlManager): AlterClientQuotas sets a client id's
producer_byte_rate, and the next Produce past it carries throttle_time_ms = (rate - quota) / quota x
the sampled windows' span, and mutes its connection that long (KIP-219), in virtual time."""

import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.protocol import ApiKey
from client.protocol.codec import encode_request
from tests.broker_emu.wire import WireClient, produce_body

ALTER, DESCRIBE = ApiKey.ALTER_CLIENT_QUOTAS, ApiKey.DESCRIBE_CLIENT_QUOTAS


async def _alter(w, entity, ops, validate_only=False):
    body = {"entries": [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                         "ops": [{"key": k, "value": v, "remove": rm} for k, v, rm in ops]}], "validate_only": validate_only}
    r = await w.call(ALTER, 1, body)
    return [(e.error_code, e.error_message) for e in r.entries]


async def test_a_producer_past_its_byte_rate_is_throttled_and_muted(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        admin = WireClient(cluster.connect(0), client_id="admin")
        assert await _alter(admin, [("client-id", "p")], [("producer_byte_rate", 10000, False)]) == [(0, None)]
        w = WireClient(cluster.connect(0), client_id="p")
        body = produce_body("t", 0, [b"x" * 150_000], acks=1)
        size = len(encode_request(ApiKey.PRODUCE, 9, 1, "p", body)) - 4
        r = await w.call(ApiKey.PRODUCE, 9, body)
        # one sample in 11 windows of 1 s: the rate is size / 10 s (Rate.windowSize's minimum)
        assert r.throttle_time_ms == round((size / 10 - 10000) / 10000 * 10 * 1000)
        sent = cluster.now_ms()
        await w.call(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})
        assert cluster.now_ms() - sent >= r.throttle_time_ms                  # the connection was muted
        [event] = cluster.trace.query(kind=Kind.QUOTA_THROTTLE)
        assert (event.details["quota"], event.details["bound"]) == ("producer_byte_rate", 10000)
        other = WireClient(cluster.connect(0), client_id="q")                 # another client id: no quota
        assert (await other.call(ApiKey.PRODUCE, 9, body)).throttle_time_ms == 0


async def test_a_client_that_leaves_while_muted_is_seen_leaving_then(autojump_clock):
    """The mute holds the client's next requests back, not the reading of its connection: its
    close is traced when it happens (were the answer's mute a wait in the connection's reader,
    the close would be seen only once the mute ended)."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        admin = WireClient(cluster.connect(0), client_id="admin")
        assert await _alter(admin, [("client-id", "p")], [("producer_byte_rate", 10000, False)]) == [(0, None)]
        stream = cluster.connect(0)
        r = await WireClient(stream, client_id="p").call(ApiKey.PRODUCE, 9, produce_body("t", 0, [b"x" * 150_000], acks=1))
        assert r.throttle_time_ms > 1000
        left = cluster.now_ms()
        await stream.aclose()
        await trio.sleep(r.throttle_time_ms / 1000 + 1)
        [close] = [e for e in cluster.trace.query(kind="conn_close") if e.details["closed_by"] == "client"]
        assert close.t_ms == left


async def test_describe_and_alter_with_kafkas_rules(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        assert await _alter(w, [("client-id", None)], [("consumer_byte_rate", 5e6, False)]) == [(0, None)]
        assert await _alter(w, [("user", "alice"), ("client-id", "a")], [("request_percentage", 12.5, False)]) == [(0, None)]
        assert await _alter(w, [("client-id", "v")], [("producer_byte_rate", 1, False)], validate_only=True) == [(0, None)]
        r = await w.call(DESCRIBE, 1, {"components": [{"entity_type": "client-id", "match_type": 2, "match": None}],
                                       "strict": False})
        got = {tuple((e.entity_type, e.entity_name) for e in x.entity): {v.key: v.value for v in x["values"]} for x in r.entries}
        assert got == {(("client-id", None),): {"consumer_byte_rate": 5e6},
                       (("client-id", "a"), ("user", "alice")): {"request_percentage": 12.5}}
        r = await w.call(DESCRIBE, 1, {"components": [{"entity_type": "client-id", "match_type": 1, "match": None}],
                                       "strict": True})
        assert [len(x.entity) for x in r.entries] == [1]
        assert await _alter(w, [("client-id", None)], [("consumer_byte_rate", 0.0, True)]) == [(0, None)]
        errors = [await _alter(w, e, ops) for e, ops in (
            ([], [("producer_byte_rate", 1, False)]),
            ([("client-id", "a"), ("client-id", "b")], [("producer_byte_rate", 1, False)]),
            ([("group", "g")], [("producer_byte_rate", 1, False)]),
            ([("client-id", "")], [("producer_byte_rate", 1, False)]),
            ([("ip", "127.0.0.1"), ("user", "u")], [("connection_creation_rate", 1, False)]),
            ([("client-id", "a")], [("nope", 1, False)]),
            ([("client-id", "a")], [("producer_byte_rate", 0, False)]),
            ([("client-id", "a")], [("producer_byte_rate", 1.5, False)]),
            ([("client-id", "a")], [("producer_byte_rate", 1, False), ("producer_byte_rate", 2, False)]),
        )]
        assert [e[0] for e in errors] == [(42, "Invalid empty client quota entity"),
                                         (0, None),   # a repeated entity type: the last wins, as in Kafka 4.4
                                         (42, "Unhandled client quota entity type: group"),
                                         (42, "Empty client-id not supported"),
                                         (42, "Invalid quota entity combination, IP entity shouldnot be combined with User "
                                              "or ClientId"),
                                         (42, "Invalid configuration key nope"),
                                         (42, "Quota producer_byte_rate must be greater than 0"),
                                         (42, "producer_byte_rate cannot be a fractional value."),
                                         (42, "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=a})")]


async def test_a_consumer_past_its_byte_rate_is_throttled_by_its_fetch_answers(autojump_clock):
    """consumer_byte_rate counts each Fetch answer's size (KafkaApis records the response size)."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        admin = WireClient(cluster.connect(0), client_id="admin")
        await admin.call(ApiKey.PRODUCE, 9, produce_body("t", 0, [b"y" * 200_000], acks=1))
        assert await _alter(admin, [("client-id", "c")], [("consumer_byte_rate", 10000, False)]) == [(0, None)]
        w = WireClient(cluster.connect(0), client_id="c")
        fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                 "session_id": 0, "session_epoch": -1, "topics": [{"topic": "t", "topic_id": cluster.topics["t"].topic_id,
                 "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
                 "forgotten_topics_data": [], "rack_id": ""}
        r = await w.call(ApiKey.FETCH, 12, fetch)
        assert len(r.responses[0].partitions[0].records or b"") > 200_000
        assert r.throttle_time_ms > 9000                  # ~(200 KB / 10 s - 10 KB/s) / 10 KB/s x 10 s
        [event] = cluster.trace.query(kind=Kind.QUOTA_THROTTLE)
        assert event.details["quota"] == "consumer_byte_rate"
