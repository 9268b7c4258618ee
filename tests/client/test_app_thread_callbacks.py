"""The blocking consumer's rebalance callbacks handed to the application
(client/consumer/app_callbacks.py), under the KIP-848 driver in virtual time: the group hands each
callback over and waits for it beside its heartbeats, for as long as the application takes to
run it — or until the broker fences the member at its rebalance timeout."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.consumer.app_callbacks import AppThreadCallbacks
from client.consumer.async_consumer import open_consumer
from client.consumer.records import TopicPartition
from tests.client.test_consumer_groups import connect_to, events, poll_until
from tests.client.test_consumer_kip848 import BROKER, K848

ALL = [TopicPartition("t", p) for p in range(4)]


async def _application(app: AppThreadCallbacks, busy_until: list[float]) -> None:
    """The application's share, every 50 ms: whatever is queued, unless it is busy elsewhere until
    ``busy_until[0]`` (the blocking face runs the queue inside poll: an application that is not
    in poll leaves it waiting). On the trio thread here, so virtual time stays exact; that the
    blocking face runs them on the polling thread is tested on loopback
    (test_blocking_consumer.py)."""
    while True:
        if trio.current_time() >= busy_until[0]:
            _, error = app.run_pending()
            assert error is None
        await trio.sleep(0.05)


async def test_a_callback_handed_to_the_application_waits_for_it_while_the_heartbeats_go_on(autojump_clock):
    """c1's on_revoke is queued for the application, which is busy for 8 s before it runs it; c1's
    heartbeats keep the broker's 2 s interval meanwhile, c2 gets its partitions only after the
    callback ran (the group waits for the revocation), and nobody is fenced (the rebalance
    timeout, max.poll.interval.ms, is 20 s)."""
    async with open_cluster(1, topics=[("t", 4, 1)], listen=False, config=BROKER) as cluster:
        app, ran, asked, busy_until = AppThreadCallbacks(), [], [], [0.0]

        async def hand_over(callback, tps):   # the blocking face's hand-over; the application is busy now
            if callback is not None and tps and not asked:
                asked.append(cluster.now_ms())
                busy_until[0] = trio.current_time() + 8.0
            await app.run(callback, tps)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(_application, app, busy_until)
            async with open_consumer({**K848, "client.id": "c1"}, connect=connect_to(cluster), run_callback=hand_over) as c1, \
                    open_consumer({**K848, "client.id": "c2"}, connect=connect_to(cluster)) as c2:
                c1.subscribe(["t"], on_revoke=lambda tps: ran.append((sorted(tps), cluster.now_ms())))
                await poll_until([c1], lambda: c1.assignment() == ALL)
                c2.subscribe(["t"])
                await poll_until([c1, c2], lambda: len(c2.assignment()) == 2, rounds=200)
                got_them = cluster.now_ms()
            nursery.cancel_scope.cancel()   # both closed: c1's last on_revoke went through the application too
        (revoked, at), (at_close, _) = ran
        assert len(revoked) == 2 and at - asked[0] == pytest.approx(8000, abs=50) and len(at_close) == 2
        assert got_them >= at                             # the group waited for the revocation
        beats = [e.t_ms for e in events(cluster, Kind.RECV, "ConsumerGroupHeartbeat", "c1")]
        during = [b for b in beats if asked[0] <= b <= at]
        assert len(during) >= 4 and max(b - a for a, b in zip(during, during[1:])) <= 2000, beats
        assert [e.details["reason"] for e in events(cluster, Kind.GROUP_MEMBER_FENCED)] == ["left", "left"]


async def test_a_callback_the_application_never_runs_gets_the_member_fenced_at_its_rebalance_timeout(autojump_clock):
    """Nothing runs c1's queued on_revoke (its application stopped polling): c1 goes on
    heartbeating, so the session never expires, but it never reports the partitions gone; the
    broker fences it at its rebalance timeout (max.poll.interval.ms, 20 s) and c2 takes every
    partition. When the application runs the callbacks at last, c1 is told its partitions were
    lost and joins again."""
    async with open_cluster(1, topics=[("t", 4, 1)], listen=False, config=BROKER) as cluster:
        app, seen = AppThreadCallbacks(), []
        async with trio.open_nursery() as nursery:
            async with open_consumer({**K848, "client.id": "c1"}, connect=connect_to(cluster), run_callback=app.run) as c1, \
                    open_consumer({**K848, "client.id": "c2"}, connect=connect_to(cluster)) as c2:
                c1.subscribe(["t"], on_assign=lambda tps: seen.append(("assign", sorted(tps))),
                             on_revoke=lambda tps: seen.append(("revoke", sorted(tps))))
                while not app.run_pending()[0]:      # on_assign of every partition: this once, run at once
                    await c1.poll(0.5)
                await poll_until([c1], lambda: c1.assignment() == ALL)
                c2.subscribe(["t"])
                await poll_until([c2], lambda: c2.assignment() == ALL, rounds=100)
                got_them = cluster.now_ms()
                asked = next(e.t_ms for e in events(cluster, Kind.GROUP_MEMBER_EPOCH)
                             if e.details["state"] == "unrevoked_partitions")
                (fence,) = events(cluster, Kind.GROUP_MEMBER_FENCED)
                assert fence.details["reason"] == "rebalance" and fence.t_ms - asked == 20_000
                assert got_them - fence.t_ms <= 2000          # c2's next heartbeat
                assert seen == [("assign", ALL)]          # the revocation is still queued, not run
                assert len(events(cluster, Kind.RECV, "ConsumerGroupHeartbeat", "c1")) > 10   # heartbeating all along
                for _ in range(40):                     # the application polls again
                    app.run_pending()
                    await c1.poll(0.5)
                    if c1.assignment():
                        break
                assert [kind for kind, _ in seen[1:3]] == ["revoke", "revoke"]   # the two asked, then the rest lost
                assert sorted(seen[1][1] + seen[2][1]) == ALL
                assert c1.assignment() and len(c1.assignment()) + len(c2.assignment()) <= 4
                nursery.start_soon(_application, app, [0.0])   # for the revocations as they close
            nursery.cancel_scope.cancel()
