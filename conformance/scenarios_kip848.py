"""The ``kip848`` family: the consumer group protocol of KIP-848, where the broker owns the
group's timers (docs/kip848.md). The session timeout and the heartbeat interval are broker
settings (``group.consumer.session.timeout.ms``, ``group.consumer.heartbeat.interval.ms``) that
the client receives and obeys; a client refuses to set them itself."""

from __future__ import annotations

import statistics

from broker_emu.trace import Kind
from conformance import contracts as C
from conformance.model import SILENT_MEMBER, Contract, Evidence, Operation, Scenario, Verdict

# Kafka's defaults, which both harnesses scale for real-time runs (conformance.cluster_setup.kip848_timers):
# the scenarios set no broker config, so they run unchanged on a shared Kafka cluster too
SESSION_MS, INTERVAL_MS = 45_000, 5_000
CONSUMER_PROTOCOL = {"group.protocol": "consumer"}


def takeover_at_broker_session(operation: str, session_ms: float = SESSION_MS, interval_ms: float = INTERVAL_MS) -> Contract:
    """A crashed member's partitions reached the survivor one broker session timeout after the
    crash, give or take one heartbeat interval: the crashed member's last heartbeat was at most an
    interval before the crash, and the survivor learns of the new assignment on its next
    heartbeat. The client's own settings play no part."""

    def check(ev: Evidence) -> Verdict:
        o = next((x for x in ev.outcomes if x.operation == operation), None)
        if o is None or not o.ok:
            return Verdict(False, "no takeover", "the crashed member's partitions never moved")
        session, interval, took = session_ms / ev.scale, interval_ms / ev.scale, o.elapsed_s * 1000
        figure = f"took over {took:.0f} ms after the crash (broker session {session:.0f} ms, heartbeat every {interval:.0f} ms)"
        low, high = session - interval - ev.slack_ms, session + interval + ev.slack_ms
        if not low <= took <= high:
            return Verdict(False, figure, f"expected between {low:.0f} and {high:.0f} ms")
        return Verdict(True, figure)

    return Contract("the partitions move at the broker's session timeout", check)


def heartbeats_at_broker_interval(interval_ms: float = INTERVAL_MS, tolerance: float = 0.2) -> Contract:
    """The member's steady heartbeats (after its join and its acknowledgement) are spaced by the
    interval the broker sent it, read on the wire."""

    def check(ev: Evidence) -> Verdict:
        times = [e.t_ms for e in ev.events(Kind.RECV)
                 if e.api == "ConsumerGroupHeartbeat" and e.client_id != SILENT_MEMBER]
        gaps = [b - a for a, b in zip(times[2:], times[3:])]
        if len(gaps) < 3:
            return Verdict(False, f"{len(times)} heartbeat(s)", "too few heartbeats to measure their spacing")
        want, median = interval_ms / ev.scale, statistics.median(gaps)
        figure = f"median gap {median:.0f} ms over {len(gaps)} heartbeats (broker interval {want:.0f} ms)"
        if abs(median - want) > want * tolerance + ev.slack_ms:
            return Verdict(False, figure, f"heartbeats should follow the broker's interval, {want:.0f} ms")
        return Verdict(True, figure)

    return Contract("heartbeats follow the broker's interval", check, side="server")


def fenced_at_rebalance_timeout(operation: str, interval_ms: float = INTERVAL_MS) -> Contract:
    """The joining member got every partition one rebalance timeout (the slow member's
    max.poll.interval.ms) after the slow member was asked to revoke — when the broker fenced it —
    within a heartbeat interval either side for when the request and the news reached each."""

    def check(ev: Evidence) -> Verdict:
        o = next((x for x in ev.outcomes if x.operation == operation), None)
        if o is None or not o.ok:
            return Verdict(False, "no takeover", "the slow member's partitions never moved")
        limit, interval = float(ev.config.get("max.poll.interval.ms", 300_000)), interval_ms / ev.scale
        took = o.elapsed_s * 1000
        figure = f"every partition {took:.0f} ms after joining (rebalance timeout {limit:.0f} ms, heartbeat every {interval:.0f})"
        if not limit - ev.slack_ms <= took <= limit + 2 * interval + ev.slack_ms:
            return Verdict(False, figure, f"expected between {limit:.0f} and {limit + 2 * interval:.0f} ms")
        return Verdict(True, figure)

    return Contract("a member slow to revoke is fenced at its rebalance timeout", check)


def commits_never_refused_as_stale() -> Contract:
    """The member committed through the rebalance, with the epoch it knew — behind the broker's —
    and the broker accepted every commit for partitions the member still held (KIP-1251: no
    OffsetCommit answered STALE_MEMBER_EPOCH). Read on the wire."""

    def check(ev: Evidence) -> Verdict:
        answers = [e for e in ev.events(Kind.SEND) if e.api == "OffsetCommit"]
        stale = [e for e in answers if 113 in (e.details.get("errors") or [])]
        figure = f"{len(answers)} OffsetCommit answer(s), {len(stale)} STALE_MEMBER_EPOCH"
        if len(answers) < 3:
            return Verdict(False, figure, "too few commits to have raced the rebalance")
        return Verdict(not stale, figure, "" if not stale else "a commit for partitions the member held was refused as stale")

    return Contract("commits with a lagging epoch are accepted for partitions still held", check, side="server")


def leaves_at_max_poll_interval(interval_ms: float = INTERVAL_MS) -> Contract:
    """The member that stopped polling left by itself (a heartbeat with epoch -1) once
    max.poll.interval.ms had passed since it got its partitions (within a heartbeat interval:
    the client looks at its poll timer when a heartbeat is due), and rejoined (epoch 0) when the
    application polled again. Read on the wire."""

    def check(ev: Evidence) -> Verdict:
        beats = [e for e in ev.events(Kind.RECV) if e.api == "ConsumerGroupHeartbeat" and e.client_id != SILENT_MEMBER]
        joined = next((e for e in beats if (e.details.get("member_epoch") or 0) > 0), None)
        left = next((e for e in beats if e.details.get("member_epoch") == -1), None)
        if joined is None or left is None:
            return Verdict(False, "never left", "no heartbeat with epoch -1 after the member joined")
        rejoined = any(e.details.get("member_epoch") == 0 and e.t_ms > left.t_ms for e in beats)
        limit, interval = float(ev.config.get("max.poll.interval.ms", 300_000)), interval_ms / ev.scale
        took = left.t_ms - joined.t_ms
        figure = f"left {took:.0f} ms after joining (max.poll.interval.ms {limit:.0f}, heartbeat every {interval:.0f})"
        if not limit - interval - ev.slack_ms <= took <= limit + interval + ev.slack_ms:
            return Verdict(False, figure, f"expected to leave between {limit - interval:.0f} and {limit + interval:.0f} ms")
        if not rejoined:
            return Verdict(False, figure, "it did not rejoin (epoch 0) when polled again")
        return Verdict(True, figure)

    return Contract("leaves at max.poll.interval.ms, rejoins on the next poll", check, side="server")


def one_owner_per_partition() -> Contract:
    """No partition was ever held by two members at once: every member's assigned and revoking
    partitions, as the coordinator reported them after each change (group_member_epoch, and
    group_member_fenced releasing them), never overlap."""

    def check(ev: Evidence) -> Verdict:
        held: dict[str, set[tuple[str, int]]] = {}
        changes = 0
        for e in ev.trace:
            d = e.details
            if e.kind == Kind.GROUP_MEMBER_EPOCH:
                changes += 1
                held[d["member"]] = {(t, p) for part in ("assigned", "revoking") for t, ps in d[part].items() for p in ps}
            elif e.kind == Kind.GROUP_MEMBER_FENCED:
                held.pop(d["member"], None)
            else:
                continue
            members = list(held.items())
            for i, (a, mine) in enumerate(members):
                for b, theirs in members[i + 1:]:
                    if mine & theirs:
                        return Verdict(False, f"{changes} assignment changes",
                                       f"at {e.t_ms:.0f} ms {sorted(mine & theirs)} held by {a[:8]} and {b[:8]}")
        if not changes:
            return Verdict(False, "no assignment", "the coordinator reported no member epoch change")
        return Verdict(True, f"{changes} assignment changes, never two owners")

    return Contract("a partition never has two owners", check, side="server")


def stopped_mid_revocation() -> Contract:
    """The coordinator's broker stopped while a member was asked to revoke and had not yet
    reported the partitions gone, and that member then completed its reconciliation (a later epoch)."""

    def check(ev: Evidence) -> Verdict:
        revoking: dict[str, float] = {}
        stopped_during: list[str] = []
        stopped_at = 0.0
        for e in ev.trace:
            d = e.details
            if e.kind == Kind.GROUP_MEMBER_EPOCH:
                if d["state"] == "unrevoked_partitions":
                    revoking.setdefault(d["member"], e.t_ms)
                elif d["member"] in stopped_during:
                    return Verdict(True, f"the coordinator stopped while {d['member'][:8]} was revoking; it reached "
                                         f"epoch {d['to']} at the new coordinator {e.t_ms - stopped_at:.0f} ms later")
                else:
                    revoking.pop(d["member"], None)
            elif e.kind == Kind.BROKER_STOP and revoking:
                stopped_during, stopped_at = list(revoking), e.t_ms
        if not stopped_during:
            return Verdict(False, "no stop mid-revocation", "the coordinator did not stop while a member was revoking")
        return Verdict(False, "stopped mid-revocation", "the revoking member never completed its reconciliation")

    return Contract("the coordinator stops mid-revocation and the revocation completes", check, side="server")


KIP848_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        id="kip848.crashed-member-expires-at-broker-session",
        family="KIP-848 groups",
        title="A member crashes: the broker expires it at group.consumer.session.timeout.ms and its partitions move",
        teaching=("Under group.protocol=consumer the session timeout is the broker's, not the client's: a client "
                  "may not even set session.timeout.ms. A member that dies without leaving keeps its partitions "
                  "until the coordinator's session timer fires; the survivor is given them on its next "
                  "heartbeat. Nothing the survivor configures changes when that happens."),
        references=("GroupMetadataManager.scheduleConsumerGroupSessionTimeout", "KIP-848"),
        topics=(("t", 4, 3),),
        steps=(Operation("kip848_member_crash", {"group": "k848-crash", "topic": "t"}, timeout_s=120.0),),
        client_config=CONSUMER_PROTOCOL,
        contracts=(C.outcome_is("kip848_member_crash", ok=True), takeover_at_broker_session("kip848_member_crash")),
    ),
    Scenario(
        id="kip848.heartbeat-interval-from-broker",
        family="KIP-848 groups",
        title="The member heartbeats at the interval the broker sent it (group.consumer.heartbeat.interval.ms)",
        teaching=("Every ConsumerGroupHeartbeat answer carries heartbeat_interval_ms: the broker paces its members. "
                  "A client keeps no heartbeat.interval.ms of its own under the new protocol; a broker operator "
                  "changes the pace of every member at once."),
        references=("ConsumerGroupHeartbeatResponse.HeartbeatIntervalMs", "KIP-848"),
        steps=(Operation("kip848_heartbeats", {"group": "k848-hb", "topic": "t", "run_ms": 40_000}, timeout_s=30.0),),
        client_config=CONSUMER_PROTOCOL,
        contracts=(C.outcome_is("kip848_heartbeats", ok=True), heartbeats_at_broker_interval()),
    ),
    Scenario(
        id="kip848.late-poll-leaves-and-rejoins",
        family="KIP-848 groups",
        title="The application stops polling: the member leaves at max.poll.interval.ms and rejoins on its next poll",
        teaching=("max.poll.interval.ms stays a client clock under KIP-848 (it is also sent to the broker as the "
                  "rebalance timeout). A consumer whose application stops calling poll() is presumed stuck: its "
                  "background thread sends a leaving heartbeat (epoch -1) so the group can move on without waiting "
                  "for any session, and the next poll() joins again with epoch 0."),
        references=("ConsumerMembershipManager.transitionToSendingLeaveGroup", "KIP-848", "KIP-62"),
        topics=(("t", 2, 3),),
        steps=(Operation("kip848_late_poll", {"group": "k848-late", "topic": "t", "stall_ms": 90_000}, timeout_s=60.0),),
        client_config={**CONSUMER_PROTOCOL, "max.poll.interval.ms": 60_000},
        needs=("max.poll.interval.ms",),
        contracts=(C.outcome_is("kip848_late_poll", ok=True), leaves_at_max_poll_interval()),
    ),
    Scenario(
        id="kip848.coordinator-dies-mid-reconciliation",
        family="KIP-848 groups",
        not_on_kafka=("its contract reads the group coordinator's own trace (group_member_epoch), which a proxy in "
                      "front of Kafka cannot see"),
        title="The group coordinator's broker stops while a member is revoking: the group carries on at the new coordinator",
        teaching=("A KIP-848 group is all records in __consumer_offsets: when its coordinator's broker stops, the new "
                  "leader of that partition has the group whole — epochs, assignments, the revocation under way. "
                  "The members find the new coordinator, heartbeat with the epochs they had, and the reconciliation "
                  "goes on; no partition ever has two owners."),
        references=("GroupCoordinatorShard.onLoaded", "CurrentAssignmentBuilder", "KIP-848"),
        topics=(("t", 4, 3),),
        steps=(Operation("kip848_coordinator_dies", {"group": "k848-move", "topic": "t"}, timeout_s=120.0),),
        faults=({"stop_coordinator_when_revoking": "k848-move"},),
        client_config=CONSUMER_PROTOCOL,
        contracts=(C.outcome_is("kip848_coordinator_dies", ok=True), stopped_mid_revocation(), one_owner_per_partition()),
    ),
    Scenario(
        id="kip848.slow-revocation-fenced-at-rebalance-timeout",
        family="KIP-848 groups",
        title="A member slow to give partitions up is fenced at its rebalance timeout, and the others take them",
        teaching=("Under KIP-848 nobody waits for a slow member: the broker asks it to revoke and starts its "
                  "rebalance timer (the member's max.poll.interval.ms). If the member has not reported the "
                  "partitions gone by then — its on_revoke callback is still committing, say — the broker fences "
                  "it, and the newcomer gets every partition on its next heartbeat. In the classic protocol the "
                  "whole group would have waited in JoinGroup."),
        references=("GroupMetadataManager.scheduleConsumerGroupRebalanceTimeout", "KIP-848"),
        topics=(("t", 2, 3),),
        steps=(Operation("kip848_slow_revoke", {"group": "k848-slow", "topic": "t", "revoke_ms": 120_000}, timeout_s=120.0),),
        client_config={**CONSUMER_PROTOCOL, "max.poll.interval.ms": 60_000},
        contracts=(C.outcome_is("kip848_slow_revoke", ok=True), fenced_at_rebalance_timeout("kip848_slow_revoke")),
    ),
    Scenario(
        id="kip848.commit-races-the-rebalance",
        family="KIP-848 groups",
        title="Commits race a rebalance with the member's epoch lagging: accepted for the partitions it still holds",
        teaching=("A commit carries the member epoch, and the broker's moves on with every reconciliation step, while "
                  "the client learns it only from the next heartbeat answer. Before Kafka 4.3 a commit with the "
                  "previous epoch was refused (STALE_MEMBER_EPOCH) even for partitions the member still owned; "
                  "since KIP-1251 the broker remembers the epoch at which each partition was given, and accepts "
                  "a lagging commit for partitions held since then. Here every heartbeat answer comes 3 s late."),
        references=("KIP-1251", "ConsumerGroup.validateOffsetCommit", "KIP-848"),
        topics=(("t", 2, 3),),
        steps=(Operation("kip848_stale_commit", {"group": "k848-stale", "topic": "t", "every_ms": 500, "run_ms": 30_000},
                         timeout_s=60.0),),
        # every heartbeat answer comes 3 s late: the member learns its new epoch after the broker set it
        faults=({"match": {"api": "ConsumerGroupHeartbeat"}, "action": {"type": "delay_response", "ms": 3000}},),
        client_config=CONSUMER_PROTOCOL,
        contracts=(C.outcome_is("kip848_stale_commit", ok=True), commits_never_refused_as_stale()),
    ),
)
