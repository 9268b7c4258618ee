"""ACLs and the authorizer on the wire, in virtual time: principals from SASL,
StandardAuthorizer's rules, the refusals KafkaApis gives. Real clients: tests/realclients/test_acls.py."""

import pytest

from broker_emu.runtime import open_cluster
from client.sasl import _Scram
from tests.broker_emu.helpers import METADATA, PRODUCE, SASL_HANDSHAKE, WireClient, batch, partition_results, produce_many

SASL_AUTHENTICATE, DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 36, 29, 30, 31
JOIN_GROUP, INIT_PRODUCER_ID, FETCH = 11, 22, 1
TOPIC, GROUP, CLUSTER = 2, 3, 4
LITERAL, PREFIXED = 3, 4
READ, WRITE, DESCRIBE, ALL = 3, 4, 8, 2
DENY, ALLOW = 2, 3
SECURED = {"emu.security.protocol": "SASL_PLAINTEXT", "emu.sasl.users": "admin:a,alice:b,bob:c",
           "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
           "super.users": "User:admin"}
TOPICS = [("orders-a", 1, 1), ("orders-b", 1, 1), ("secret", 1, 1)]


async def login(cluster, user: str, password: str) -> WireClient:
    w = WireClient(cluster.connect(0))
    assert (await w.call(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})).error_code == 0
    scram = _Scram("SCRAM-SHA-256", user, password)
    first = await w.call(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.first()})
    final = await w.call(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.final(bytes(first.auth_bytes))})
    assert final.error_code == 0, final.error_message
    return w


def acl(resource_type, name, operation, permission=ALLOW, principal="User:alice", pattern=LITERAL):
    return {"resource_type": resource_type, "resource_name": name, "resource_pattern_type": pattern,
            "principal": principal, "host": "*", "operation": operation, "permission_type": permission}


def any_filter(**kw):
    f = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1, "principal_filter": None,
         "host_filter": None, "operation": 1, "permission_type": 1}
    return {**f, **kw}


async def test_without_an_authorizer_acl_calls_say_security_disabled(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        d = await w.call(DESCRIBE_ACLS, 3, any_filter())
        assert (d.error_code, d.error_message) == (54, "No Authorizer is configured on the broker")
        c = await w.call(CREATE_ACLS, 3, {"creations": [acl(TOPIC, "t", READ)]})
        assert [(r.error_code, r.error_message) for r in c.results] == [(54, "No Authorizer is configured.")]


async def test_produce_and_metadata_follow_the_acls(autojump_clock):
    async with open_cluster(1, topics=TOPICS, listen=False, config=SECURED) as cluster:
        admin = await login(cluster, "admin", "a")
        created = await admin.call(CREATE_ACLS, 3, {"creations": [
            acl(TOPIC, "orders-", WRITE, pattern=PREFIXED), acl(TOPIC, "*", ALL, principal="User:bob"),
            acl(TOPIC, "secret", WRITE, DENY, principal="User:bob")]})
        assert [r.error_code for r in created.results] == [0, 0, 0]
        alice = await login(cluster, "alice", "b")
        body = produce_many([("orders-a", 0, batch([b"x"])), ("secret", 0, batch([b"y"]))], acks=1)
        got = {k: p.error_code for k, p in partition_results(await alice.call(PRODUCE, 9, body)).items()}
        assert got == {("orders-a", 0): 0, ("secret", 0): 29}        # one request, split by the authorizer
        assert cluster.partition("secret", 0).log_end_offset == 0
        # WRITE implies DESCRIBE: every topic lists only what alice may describe
        md = await alice.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                             "include_topic_authorized_operations": True})
        assert sorted(t.name for t in md.topics) == ["orders-a", "orders-b"]
        assert md.topics[0].topic_authorized_operations == (1 << WRITE) | (1 << DESCRIBE)
        named = await alice.call(METADATA, 12, {"topics": [{"name": "secret", "topic_id": None}],
                                                "allow_auto_topic_creation": True})
        assert [(t.name, t.error_code, list(t.partitions)) for t in named.topics] == [("secret", 29, [])]
        # bob: ALL on every topic, but a DENY of WRITE on secret wins; the DENY does not deny reading
        bob = await login(cluster, "bob", "c")
        denied = partition_results(await bob.call(PRODUCE, 9, produce_many([("secret", 0, batch([b"z"]))], acks=1)))
        assert denied[("secret", 0)].error_code == 29
        fetch = await bob.call(FETCH, 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                                           "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                                               {"topic": "secret", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                "current_leader_epoch": -1, "log_start_offset": -1,
                                                "partition_max_bytes": 1 << 20}]}], "forgotten_topics_data": [], "rack_id": ""})
        assert fetch.responses[0].partitions[0].error_code == 0
        refusals = [e for e in cluster.trace.events if e.kind == "authorization"]
        assert refusals and refusals[0].details["principal"] == "User:alice"


async def test_cluster_group_and_idempotence_checks(autojump_clock):
    async with open_cluster(1, topics=TOPICS, listen=False, config=SECURED) as cluster:
        admin = await login(cluster, "admin", "a")
        await admin.call(CREATE_ACLS, 3, {"creations": [acl(TOPIC, "orders-a", WRITE)]})
        alice, bob = await login(cluster, "alice", "b"), await login(cluster, "bob", "c")
        c = await alice.call(CREATE_ACLS, 3, {"creations": [acl(TOPIC, "x", READ)]})
        assert [(r.error_code, r.error_message) for r in c.results] == [(31, "Cluster authorization failed.")]
        join = await alice.call(JOIN_GROUP, 9, {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                                                "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                                                "protocols": [{"name": "range", "metadata": b""}], "reason": None})
        assert join.error_code == 30
        # CreateTopics: CREATE on the topic (or the cluster), per topic in one request
        await admin.call(CREATE_ACLS, 3, {"creations": [acl(TOPIC, "mine-", 5, pattern=PREFIXED)]})
        new = {"name": "", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        made = await alice.call(19, 7, {"topics": [{**new, "name": "mine-1"}, {**new, "name": "theirs"}],
                                        "timeout_ms": 5000, "validate_only": False})
        assert sorted((t.name, t.error_code) for t in made.topics) == [("mine-1", 0), ("theirs", 29)]
        assert "mine-1" in cluster.topics and "theirs" not in cluster.topics
        # idempotence: WRITE on some topic is enough (KafkaApis.handleInitProducerIdRequest)
        ok = await alice.call(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 1})
        refused = await bob.call(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 1})
        assert (ok.error_code, refused.error_code) == (0, 31)


async def test_describe_and_delete_acls_by_filter(autojump_clock):
    async with open_cluster(1, listen=False, config=SECURED) as cluster:
        admin = await login(cluster, "admin", "a")
        creations = [acl(TOPIC, "orders-", WRITE, pattern=PREFIXED), acl(TOPIC, "orders-a", READ),
                     acl(GROUP, "g", READ), acl(TOPIC, "*", DESCRIBE, principal="User:bob")]
        await admin.call(CREATE_ACLS, 3, {"creations": creations})
        bad = await admin.call(CREATE_ACLS, 3, {"creations": [acl(CLUSTER, "c", ALL), acl(TOPIC, "", READ)]})
        assert [(r.error_code, r.error_message) for r in bad.results] == [
            (42, "The only valid name for the CLUSTER resource is kafka-cluster"), (42, "Invalid empty resource name")]
        # as Kafka 4.4 answered: an ANY fails the whole request, an UNKNOWN is unparseable
        anyop = await admin.call(CREATE_ACLS, 3, {"creations": [acl(TOPIC, "t", 1), acl(TOPIC, "u", READ)]})
        assert [(r.error_code, r.error_message) for r in anyop.results] == [(-1, None), (-1, None)]
        await admin.send(DESCRIBE_ACLS, 3, any_filter(resource_type_filter=0))
        assert await admin.closed()
        admin = await login(cluster, "admin", "a")
        # MATCH on a name: the literal, the wildcard and the prefixes covering it
        d = await admin.call(DESCRIBE_ACLS, 3, any_filter(resource_type_filter=TOPIC, resource_name_filter="orders-a",
                                                          pattern_type_filter=2))
        assert sorted((r.resource_name, r.pattern_type) for r in d.resources) == [("*", 3), ("orders-", 4), ("orders-a", 3)]
        gone = await admin.call(DELETE_ACLS, 3, {"filters": [any_filter(principal_filter="User:alice")]})
        assert len(gone.filter_results[0].matching_acls) == 3
        left = await admin.call(DESCRIBE_ACLS, 3, any_filter())
        assert [(r.resource_name, [a.principal for a in r.acls]) for r in left.resources] == [("*", ["User:bob"])]


@pytest.mark.parametrize("allow", [False, True])
async def test_no_acl_on_a_resource_means_allow_everyone_if_no_acl_found(autojump_clock, allow):
    config = {**SECURED, "allow.everyone.if.no.acl.found": allow}
    async with open_cluster(1, topics=TOPICS, listen=False, config=config) as cluster:
        alice = await login(cluster, "alice", "b")
        got = partition_results(await alice.call(PRODUCE, 9, produce_many([("orders-b", 0, batch([b"x"]))], acks=1)))
        assert got[("orders-b", 0)].error_code == (0 if allow else 29)


async def test_configs_partitions_and_records_are_checked_per_resource(autojump_clock):
    async with open_cluster(1, topics=TOPICS, listen=False, config=SECURED) as cluster:
        admin = await login(cluster, "admin", "a")
        await admin.call(CREATE_ACLS, 3, {"creations": [acl(TOPIC, "orders-", ALL, pattern=PREFIXED)]})
        alice = await login(cluster, "alice", "b")
        d = await alice.call(32, 4, {"resources": [{"resource_type": 2, "resource_name": "orders-a", "configuration_keys": None},
                                                   {"resource_type": 2, "resource_name": "secret", "configuration_keys": None},
                                                   {"resource_type": 4, "resource_name": "0", "configuration_keys": None}],
                                     "include_synonyms": False, "include_documentation": False})
        assert sorted((r.resource_name, r.error_code) for r in d.results) == [("0", 31), ("orders-a", 0), ("secret", 29)]
        cp = await alice.call(37, 3, {"topics": [{"name": "orders-a", "count": 2, "assignments": None},
                                                 {"name": "secret", "count": 2, "assignments": None}],
                                      "timeout_ms": 5000, "validate_only": False})
        assert sorted((r.name, r.error_code) for r in cp.results) == [("orders-a", 0), ("secret", 29)]
        dr = await alice.call(21, 2, {"topics": [{"name": "secret", "partitions": [{"partition_index": 0, "offset": 0}]}],
                                      "timeout_ms": 5000})
        assert dr.topics[0].partitions[0].error_code == 29
        ia = await alice.call(44, 1, {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
            {"name": "min.insync.replicas", "config_operation": 0, "value": "1"}]}], "validate_only": False})
        assert [(r.error_code, r.error_message) for r in ia.responses] == [(31, "Cluster authorization failed.")]


async def test_batched_find_coordinator_and_offset_fetch_are_checked_per_group(autojump_clock):
    """FindCoordinator v4+ and OffsetFetch v8+ carry several groups: each needs DESCRIBE on its
    group (KafkaApis.getCoordinator, handleOffsetFetchRequest); the others still get answers."""
    async with open_cluster(1, topics=TOPICS, listen=False, config=SECURED) as cluster:
        admin = await login(cluster, "admin", "a")
        await admin.call(CREATE_ACLS, 3, {"creations": [acl(GROUP, "mine", READ)]})   # READ implies DESCRIBE
        alice = await login(cluster, "alice", "b")
        found = await alice.call(10, 4, {"key_type": 0, "coordinator_keys": ["mine", "theirs"]})
        assert sorted((c.key, c.error_code, c.node_id) for c in found.coordinators) == [("mine", 0, 0), ("theirs", 30, -1)]
        fetched = await alice.call(9, 9, {"groups": [{"group_id": g, "member_id": None, "member_epoch": -1, "topics": None}
                                                     for g in ("mine", "theirs")], "require_stable": False})
        assert sorted((g.group_id, g.error_code) for g in fetched.groups) == [("mine", 0), ("theirs", 30)]
        refusals = [e.details["resource"] for e in cluster.trace.events if e.kind == "authorization"]
        assert refusals == ["theirs", "theirs"]
        # ListGroups shows alice only the groups she may describe; the super user sees all
        for g in ("mine", "theirs"):
            commit = await admin.call(8, 8, {"group_id": g, "generation_id_or_member_epoch": -1, "member_id": "",
                                             "group_instance_id": None, "topics": [
                                                 {"name": "orders-a", "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                                                      "committed_leader_epoch": -1,
                                                                                      "committed_metadata": None}]}]})
            assert commit.topics[0].partitions[0].error_code == 0
        listed = await alice.call(16, 4, {"states_filter": []})
        everything = await admin.call(16, 4, {"states_filter": []})
        assert [g.group_id for g in listed.groups] == ["mine"]
        assert sorted(g.group_id for g in everything.groups) == ["mine", "theirs"]


LIST_TRANSACTIONS, DESCRIBE_TRANSACTIONS, DESCRIBE_PRODUCERS = 66, 65, 61
TRANSACTIONAL_ID = 5


async def test_transaction_listings_show_only_what_the_principal_may_describe(autojump_clock):
    """KafkaApis: ListTransactions keeps the ids the principal may DESCRIBE; DescribeTransactions
    answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED for the others and drops the topics it may not
    DESCRIBE; DescribeProducers needs READ on the topic."""
    from client.producer.async_producer import open_producer
    from client.transport import sasl_connect

    async with open_cluster(1, topics=TOPICS, listen=False, config=SECURED) as cluster:
        async def in_memory(node: int, host: str, port: int):
            return cluster.connect(0)

        connect = sasl_connect("SCRAM-SHA-256", "admin", "a", "txn-admin", inner=in_memory)   # a handed-in transport
        async with open_producer({"bootstrap.servers": "broker0:9092", "transactional.id": "t-open"},
                                 connect=connect) as p:
            await p.init_transactions()
            p.begin_transaction()
            await (await p.send("orders-a", b"x", partition=0)).get()   # left open: Ongoing
            admin, alice = await login(cluster, "admin", "a"), await login(cluster, "alice", "b")
            listing = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
            seen = await admin.call(LIST_TRANSACTIONS, 1, listing)
            assert [t.transactional_id for t in seen.transaction_states] == ["t-open"]
            assert (await alice.call(LIST_TRANSACTIONS, 1, listing)).transaction_states == []
            described = await alice.call(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["t-open"]})
            (state,) = described.transaction_states
            assert (state.error_code, state.transaction_state, state.producer_id) == (53, "", 0)
            produced = await alice.call(DESCRIBE_PRODUCERS, 0, {"topics": [{"name": "orders-a", "partition_indexes": [0]},
                                                                          {"name": "bad name", "partition_indexes": [0]}]})
            assert [(t.name, [p.error_code for p in t.partitions]) for t in produced.topics] == \
                [("orders-a", [29]), ("bad name", [17])]

            await admin.call(CREATE_ACLS, 3, {"creations": [acl(TRANSACTIONAL_ID, "t-open", DESCRIBE)]})
            assert [t.transactional_id for t in (await alice.call(LIST_TRANSACTIONS, 1, listing)).transaction_states] == \
                ["t-open"]
            (state,) = (await alice.call(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["t-open"]})).transaction_states
            assert (state.error_code, state.transaction_state, list(state.topics)) == (0, "Ongoing", [])  # no DESCRIBE on orders-a
            await admin.call(CREATE_ACLS, 3, {"creations": [acl(TOPIC, "orders-a", READ)]})    # READ implies DESCRIBE
            (state,) = (await alice.call(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["t-open"]})).transaction_states
            assert [(t.topic, list(t.partitions)) for t in state.topics] == [("orders-a", [0])]
            produced = await alice.call(DESCRIBE_PRODUCERS, 0, {"topics": [{"name": "orders-a", "partition_indexes": [0]}]})
            (part,) = produced.topics[0].partitions
            assert part.error_code == 0 and [a.producer_id for a in part.active_producers] == [state.producer_id]
            await p.abort_transaction()


async def test_offset_fetch_shows_offsets_only_of_topics_the_principal_may_describe(autojump_clock):
    """KafkaApis.fetchOffsetsForGroup / fetchAllOffsetsForGroup: a named topic the principal may
    not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED per partition (after the allowed ones); an
    all-topics fetch leaves it out — in the one-group (v7) and the batched (v9) layouts."""
    async with open_cluster(1, topics=TOPICS, listen=False, config=SECURED) as cluster:
        admin = await login(cluster, "admin", "a")
        await admin.call(CREATE_ACLS, 3, {"creations": [acl(GROUP, "mine", READ), acl(TOPIC, "orders-b", DESCRIBE)]})
        for topic in ("orders-a", "orders-b"):
            await admin.call(8, 8, {"group_id": "mine", "generation_id_or_member_epoch": -1, "member_id": "",
                                    "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                                        {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1,
                                         "committed_metadata": None}]}]})
        alice = await login(cluster, "alice", "b")
        named = [{"name": "orders-a", "partition_indexes": [0]}, {"name": "orders-b", "partition_indexes": [0]}]

        def seen(topics):
            return [(t.name, [(p.committed_offset, p.error_code) for p in t.partitions]) for t in topics]

        v7 = await alice.call(9, 7, {"group_id": "mine", "topics": named, "require_stable": False})
        assert seen(v7.topics) == [("orders-b", [(7, 0)]), ("orders-a", [(-1, 29)])]
        every = await alice.call(9, 7, {"group_id": "mine", "topics": None, "require_stable": False})
        assert seen(every.topics) == [("orders-b", [(7, 0)])]
        v9 = await alice.call(9, 9, {"groups": [{"group_id": "mine", "member_id": None, "member_epoch": -1, "topics": t}
                                                for t in (named, None)], "require_stable": False})
        assert [seen(g.topics) for g in v9.groups] == [[("orders-b", [(7, 0)]), ("orders-a", [(-1, 29)])],
                                                       [("orders-b", [(7, 0)])]]
        assert (await admin.call(9, 7, {"group_id": "mine", "topics": None, "require_stable": False})).topics[0].name


async def test_authorized_operations_are_the_principals(autojump_clock):
    """KIP-430 under the authorizer (AuthHelper.authorizedOperations): DescribeGroups and
    DescribeCluster report what the principal may do, the super user everything."""
    from broker_emu.handlers.authorized import CLUSTER_OPERATIONS, GROUP_OPERATIONS, bit_field

    async with open_cluster(1, topics=TOPICS, listen=False, config=SECURED) as cluster:
        admin = await login(cluster, "admin", "a")
        await admin.call(CREATE_ACLS, 3, {"creations": [acl(GROUP, "mine", READ), acl(CLUSTER, "kafka-cluster", DESCRIBE)]})
        alice = await login(cluster, "alice", "b")
        groups = await alice.call(15, 5, {"groups": ["mine"], "include_authorized_operations": True})
        assert groups.groups[0].authorized_operations == bit_field((READ, DESCRIBE))     # READ implies DESCRIBE
        assert (await admin.call(15, 5, {"groups": ["mine"], "include_authorized_operations": True})
                ).groups[0].authorized_operations == GROUP_OPERATIONS
        described = await alice.call(60, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1})
        assert described.cluster_authorized_operations == bit_field((DESCRIBE,))
        everything = await admin.call(60, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1})
        assert everything.cluster_authorized_operations == CLUSTER_OPERATIONS
        unasked = await alice.call(15, 5, {"groups": ["mine"], "include_authorized_operations": False})
        assert unasked.groups[0].authorized_operations == -(1 << 31)
