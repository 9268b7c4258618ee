"""The launcher's cluster ids are Kafka's: never an id a command line reads as an option."""

from unittest import mock

from conformance.realkafka import cluster


def test_a_cluster_id_never_starts_with_a_dash():
    dash = b"\xfb" + bytes(15)     # urlsafe base64 of this starts with "-"
    fine = b"\x10" + bytes(15)
    with mock.patch.object(cluster.uuid, "uuid4", side_effect=[mock.Mock(bytes=dash), mock.Mock(bytes=fine)]):
        cid = cluster.new_cluster_id()
    assert not cid.startswith("-") and len(cid) == 22
    assert all(not cluster.new_cluster_id().startswith("-") for _ in range(2000))
