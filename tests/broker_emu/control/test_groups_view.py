"""GET /groups and /groups/{group}: a KIP-848 group that confluent-kafka (group.protocol=consumer)
joined, as the control API shows it — epochs, the member's state and assignment, its deadlines."""

import time

import pytest

from tests.realclients.conftest import require_client

from .serve import Served, http_call

pytestmark = pytest.mark.realclient


def test_a_consumer_group_with_its_epochs_and_assignment():
    require_client("confluent-kafka")
    from confluent_kafka import Consumer

    with Served("--config", "group.consumer.heartbeat.interval.ms=5000") as s:
        bootstrap = ",".join(f"{h}:{p}" for h, p in s.bootstrap)
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "seen", "group.protocol": "consumer",
                      "client.id": "watched", "log_level": 0})
        try:
            c.subscribe(["t"])
            end = time.monotonic() + 30
            while len(c.assignment()) < 3 and time.monotonic() < end:
                c.poll(0.1)
            status, groups = http_call(s.port, "GET", "/groups")
            assert status == 200 and [g["group_id"] for g in groups] == ["seen"]
            status, g = http_call(s.port, "GET", "/groups/seen")
            assert (status, g["group_type"], g["state"], g["group_epoch"], g["assignor"]) == (200, "consumer", "Stable", 1, "uniform")
            [m] = g["members"]
            assert (m["client_id"], m["member_epoch"], m["state"], m["assigned"]) == ("watched", 1, "stable", {"t": [0, 1, 2]})
            assert m["session_deadline"] is not None and m["rebalance_deadline"] is None
            assert http_call(s.port, "GET", "/groups/nope")[0] == 404
        finally:
            c.close()
