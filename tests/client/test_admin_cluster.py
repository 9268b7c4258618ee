"""The rest of our admin face (client/admin_cluster.py) against the emulator in virtual time:
leader elections, reassignments that move a replica over time, log dirs, group offsets, client
quotas and SCRAM credentials (a user added with our call logs in with our SASL client)."""

import trio

from broker_emu.runtime import open_cluster
from client.admin import open_admin
from client.admin_cluster import PREFERRED, UNCLEAN
from client.errors import ElectionNotNeededError, GroupIdNotFoundError, UnknownTopicOrPartitionError
from client.producer.async_producer import open_producer
from client.transport import sasl_connect
from tests.broker_emu.wire import WireClient
from tests.client.test_admin import BOOT, connect_to


async def test_elections_and_reassignments(autojump_clock):
    config = {"emu.replication.delay.ms": 500}
    async with open_cluster(3, topics=[("t", 2, 2)], listen=False, config=config) as cluster, \
            open_admin(BOOT, connect_to(cluster)) as admin:
        p0 = cluster.partition("t", 0)
        preferred = p0.replicas[0]
        cluster.move_leader("t", 0, p0.replicas[1])
        got = await admin.elect_leaders([("t", 0), ("t", 1), ("nope", 0)], PREFERRED)
        assert got[("t", 0)] is None and cluster.partition("t", 0).leader == preferred
        assert isinstance(got[("t", 1)], ElectionNotNeededError)
        assert isinstance(got[("nope", 0)], UnknownTopicOrPartitionError)
        assert await admin.elect_leaders(None, UNCLEAN) == {}   # every partition has a live leader
        async with open_producer(BOOT, connect=connect_to(cluster)) as p:
            for _ in range(5):
                await (await p.send("t", b"x" * 100, partition=1)).get()
        spare = next(b for b in range(3) if b not in cluster.partition("t", 1).replicas)
        target = [cluster.partition("t", 1).replicas[0], spare]
        assert await admin.alter_partition_reassignments({("t", 1): target}) == {("t", 1): None}
        pending = await admin.list_partition_reassignments()
        assert pending[("t", 1)]["adding"] == [spare]
        for _ in range(600):   # the new replica copies at the replication's pace
            if not await admin.list_partition_reassignments():
                break
            await trio.sleep(0.1)
        assert cluster.partition("t", 1).replicas == target
        dirs = await admin.describe_log_dirs([spare])
        (sizes,) = dirs[spare].values()
        assert sizes[("t", 1)] > 500     # the new replica copied the log
        w = WireClient(cluster.connect(cluster.coordinator_for("g")))
        await w.call(8, 2, {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
                            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 3,
                                                                     "committed_metadata": ""}]}]})
        assert await admin.delete_group_offsets("g", [("t", 0)]) == {("t", 0): None}
        fetched = await w.call(9, 1, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]})
        assert fetched.topics[0].partitions[0].committed_offset == -1


async def test_group_offsets_quotas_and_scram(autojump_clock):
    config = {"emu.security.protocol": "SASL_PLAINTEXT", "emu.sasl.users": "admin:a"}
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=config) as cluster:
        async def in_memory(node, host, port):
            return cluster.connect(0)
        async with open_admin(BOOT, sasl_connect("SCRAM-SHA-256", "admin", "a", "ours", inner=in_memory)) as admin:
            committed = await admin.delete_group_offsets("nobody", [("t", 0)])
            assert isinstance(committed[("t", 0)], GroupIdNotFoundError)
            quota = (("client-id", "app"),)
            assert await admin.alter_client_quotas({quota: {"producer_byte_rate": 1024.0}}) == {quota: None}
            described = await admin.describe_client_quotas([{"entity_type": "client-id", "match_type": 0, "match": "app"}])
            assert described == {quota: {"producer_byte_rate": 1024.0}}
            assert await admin.alter_client_quotas({quota: {"producer_byte_rate": None}}) == {quota: None}
            assert await admin.describe_client_quotas([{"entity_type": "client-id", "match_type": 0, "match": "app"}]) == {}
            made = await admin.alter_user_scram_credentials({("carol", "SCRAM-SHA-512"): ("carol-secret", 8192)})
            assert made == {"carol": None}
            assert (await admin.describe_user_scram_credentials(["carol"]))["carol"] == {"SCRAM-SHA-512": 8192}
        login = sasl_connect("SCRAM-SHA-512", "carol", "carol-secret", "ours", inner=in_memory)
        async with open_producer(BOOT, connect=login) as p:
            assert (await (await p.send("t", b"v", partition=0)).get()).offset == 0
