"""Setting a cluster up for a scenario (faults, replication, leader moves, the client's bootstrap),
and what a run leaves behind for log checks. Times in scenarios are Kafka's; real-time runs
divide them by ``scale``."""

from __future__ import annotations

from typing import Any

from broker_emu.broker_set import move_cluster_behind_bootstrap, open_front_door
from broker_emu.trace import Kind
from client.protocol.records import decode_batch, iter_batches
from conformance.adapters.base import MS_KEYS_SUFFIX, scaled_ms
from conformance.model import Scenario


def scale_config(config: dict[str, Any], scale: float) -> dict[str, Any]:
    return {k: scaled_ms(v, scale) if k.endswith(MS_KEYS_SUFFIX) else v for k, v in config.items()}


# a share group's record lock may be set as low as Kafka allows (its floor for this setting), so that
# the share scenarios' group lock, scaled, is accepted (conformance/scenarios_share.py); not scaled:
# Kafka refuses less than 1 s
SHARE_LOCK_FLOOR, SHARE_LOCK_FLOOR_MS = "group.share.min.record.lock.duration.ms", 1000


def kip848_timers(scale: float) -> dict[str, Any]:
    """KIP-848's broker-owned timers for a real-time run: Kafka's defaults (45 s session, 5 s
    heartbeat interval) scaled, with bounds low enough for any scaled scenario setting. The real
    Kafka cluster of such runs has the same (conformance/upstreams.KAFKA_CLUSTER_CONFIG)."""
    return {"group.consumer.session.timeout.ms": scaled_ms(45000, scale), "group.consumer.min.session.timeout.ms": 100,
            "group.consumer.heartbeat.interval.ms": scaled_ms(5000, scale),
            "group.consumer.min.heartbeat.interval.ms": 10,
            "group.consumer.assignment.interval.ms": scaled_ms(1000, scale)}


def real_time_broker_config(broker_config: dict[str, Any], scale: float) -> dict[str, Any]:
    """The emulator's settings for a real-time run: the scenario's, scaled, over the harness's
    own — no initial rebalance delay, Kafka's group.min.session.timeout.ms (6 s) scaled with
    the clients' session timeouts, and KIP-848's timers scaled, as the real Kafka cluster of such
    runs is configured (conformance/upstreams.KAFKA_CLUSTER_CONFIG)."""
    return {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": scaled_ms(6000, scale),
            **kip848_timers(scale), SHARE_LOCK_FLOOR: SHARE_LOCK_FLOOR_MS, **scale_config(broker_config, scale)}


def scale_fault(rule: dict[str, Any], scale: float) -> dict[str, Any]:
    out = dict(rule)
    for key in ("duration_ms", "at_ms"):
        if key in out:
            out[key] = scaled_ms(out[key], scale)
    action = out.get("action")
    if isinstance(action, dict) and action.get("ms"):   # 0 stays 0 (stop_broker: before handling)
        out["action"] = {**action, "ms": scaled_ms(action["ms"], scale)}
    if "replication" in out:
        out["replication"] = {**out["replication"], "lag_ms": scaled_ms(out["replication"].get("lag_ms", 0), scale)}
    return out


def _move_leader_later(cluster, spec: dict, at_s: float) -> None:
    def move() -> None:
        p = cluster.partition(spec["topic"], spec["partition"])
        target = spec["broker"]
        if target == "other":
            target = next(b for b in p.isr if b != p.leader)
        cluster.move_leader(spec["topic"], spec["partition"], target)

    if at_s <= 0:
        move()   # part of the set-up: in place before the client's first request
    else:
        cluster.scheduler.call_later(at_s, move)


def _move_leader_after(cluster, spec: dict, api: str, delay_s: float) -> None:
    """Move the leader ``delay_s`` after the first request of ``api`` arrives: "the leader moves
    while the Produce hangs" holds however long a client takes to start (kafka-python 3's eager
    bootstrap took longer than a move scheduled from the cluster's start, and the Produce then
    went to the new leader first)."""
    def watch(event) -> None:
        if event.kind == Kind.RECV and event.api == api:
            unsubscribe()
            _move_leader_later(cluster, spec, max(delay_s, 0.001))

    unsubscribe = cluster.trace.subscribe(watch)


def _stop_coordinator_when_revoking(cluster, group: str) -> None:
    """The first time a member of ``group`` is asked to revoke (the coordinator's
    group_member_epoch event, state unrevoked_partitions), its coordinator's broker stops: a
    reconciliation is under way whichever client runs the members. The stop runs as a task of its
    own (the event comes from inside the heartbeat's handler), so from that instant the broker
    handles nothing more: a request that arrives before the stop task runs is held, then cut with
    its connection — in real time a client that revokes at once (nothing to commit, no callback)
    could otherwise report the revocation done to the old coordinator, 0.7 ms later, first."""
    def watch(event) -> None:
        d = event.details or {}
        if event.kind == Kind.GROUP_MEMBER_EPOCH and d.get("group") == group and d.get("state") == "unrevoked_partitions":
            unsubscribe()
            broker = cluster.coordinator_for(group)
            cluster.faults.add({"match": {"broker": broker}, "action": "black_hole"}, cluster.now_ms())
            cluster.stop_broker_later(broker)

    unsubscribe = cluster.trace.subscribe(watch)


def _replication_when(cluster, spec: dict) -> None:
    """Change a partition's replication the moment a request of ``spec["api"]`` arrives (its
    ``recv`` event, traced before the handler runs): "the follower stops copying just as
    DeleteRecords comes in", whatever the client did before."""
    def watch(event) -> None:
        if event.kind == Kind.RECV and event.api == spec["api"]:
            unsubscribe()
            r = spec["replication"]
            cluster.set_replication(r.get("topic"), r.get("partition"), r.get("follower"), r["mode"], r.get("lag_ms", 0))

    unsubscribe = cluster.trace.subscribe(watch)


def _move_cluster_when(cluster, api: str) -> None:
    """Once the first ``api`` request has been answered (its ``send``), the old brokers answer
    nothing more (every request black-holed, so the client learns nothing of the new brokers from
    them) and the cluster moves behind its bootstrap address (broker_set.move_cluster_behind_bootstrap):
    new brokers, the bootstrap address moved to them, the old ones stopped."""
    def watch(event) -> None:
        if event.kind == Kind.SEND and event.api == api:
            unsubscribe()
            for b in cluster.live_brokers():
                cluster.faults.add({"match": {"broker": b.id}, "action": {"type": "black_hole"}}, cluster.now_ms())
            cluster.tasks.start_soon(move_cluster_behind_bootstrap, cluster)

    unsubscribe = cluster.trace.subscribe(watch)


def _lift_when_back_through_bootstrap(cluster, rules: list[int]) -> None:
    """Remove ``rules`` when, after one of them fired, a Metadata request arrives through the
    bootstrap address: "the brokers the client knows are broken, the bootstrap address leads to a
    healthy cluster", so the call can end well only through a rebootstrap."""
    via: set[tuple[int | None, int | None]] = set()

    def watch(event) -> None:
        if event.kind == Kind.CONN_OPEN and (event.details or {}).get("via") == "bootstrap":
            via.add((event.broker, event.conn))
        elif event.kind == Kind.RECV and event.api == "Metadata" and (event.broker, event.conn) in via and any(
                r.applied for r in cluster.faults.rules.values() if r.id in rules):
            unsubscribe()
            for r in rules:
                cluster.faults.remove(r)

    unsubscribe = cluster.trace.subscribe(watch)


def add_fault_rules(target, rules: list[dict]) -> None:
    """The scenario's wire fault rules (scaled), in order, on a cluster or a proxy (both have
    ``faults``, ``trace`` and ``now_ms``); those marked ``until_back_through_bootstrap`` are lifted
    once the client comes back through the bootstrap address."""
    lifted: list[int] = []
    for raw in rules:
        rule = dict(raw)
        if rule.pop("until_back_through_bootstrap", False):
            lifted.append(target.faults.add(rule, target.now_ms()).id)
        else:
            target.faults.add(rule, target.now_ms())
    if lifted:
        _lift_when_back_through_bootstrap(target, lifted)


def apply_setup(cluster, scenario: Scenario, scale: float) -> None:
    if scenario.front_door:
        open_front_door(cluster, 0)
    wire: list[dict] = []
    for raw in scenario.faults:
        rule = scale_fault(raw, scale)
        if "move_cluster_behind_bootstrap" in rule:
            _move_cluster_when(cluster, rule["move_cluster_behind_bootstrap"])
        elif "move_leader" in rule and "when" in rule:
            _move_leader_after(cluster, rule["move_leader"], rule["when"], rule.get("at_ms", 0) / 1000)
        elif "when" in rule:
            _replication_when(cluster, {"api": rule["when"], "replication": rule["replication"]})
        elif "stop_coordinator_when_revoking" in rule:
            _stop_coordinator_when_revoking(cluster, rule["stop_coordinator_when_revoking"])
        elif "move_leader" in rule:
            # scaling keeps every delay >= 1 ms; at_ms 0 (or none) means "before the client starts"
            _move_leader_later(cluster, rule["move_leader"], rule["at_ms"] / 1000 if raw.get("at_ms") else 0.0)
        elif "replication" in rule:
            r = rule["replication"]
            cluster.set_replication(r.get("topic"), r.get("partition"), r.get("follower"), r["mode"], r.get("lag_ms", 0))
        else:
            wire.append(rule)
    add_fault_rules(cluster, wire)


def bootstrap_of(cluster, scenario: Scenario) -> str:
    """The client's bootstrap.servers: every broker, or the scenario's chosen ones (so that "the
    bootstrap broker dies" means what it says), or its front door. Virtual-time runs bootstrap from broker 0,
    or the front door."""
    if cluster.front_door is not None:
        return cluster.front_door.address
    chosen = scenario.bootstrap_brokers or tuple(cluster.brokers)
    return ",".join(f"{cluster.brokers[b].host}:{cluster.brokers[b].port}" for b in chosen)


def snapshot(cluster) -> dict[str, Any]:
    partitions = [(f"{t.name}-{p.index}", p) for t in cluster.topics.values() for p in t.partitions]
    return {"log_end_offsets": {name: p.log_end_offset for name, p in partitions},
            "high_watermarks": {name: p.high_watermark for name, p in partitions},
            "read_committed": {name: read_committed(p) for name, p in partitions
                               if 0 < p.log_end_offset <= READ_COMMITTED_MAX_OFFSETS}}


READ_COMMITTED_MAX_OFFSETS = 1000   # a view for the small logs of transaction scenarios, not for load runs


def read_committed(p) -> list[str]:
    """The values a read_committed consumer reads of a partition's log (UTF-8, undecodable bytes
    replaced): a transaction's records once their commit marker is written, none of an aborted or
    still open one, every record outside a transaction."""
    out: list[str] = []
    pending: dict[int, list[str]] = {}   # producer id -> the values of its open transaction
    buf = p.log.read(0, 1 << 30, p.high_watermark)
    for pos, header in iter_batches(buf):
        if header.base_offset >= p.high_watermark:
            break
        _, records = decode_batch(buf, pos)
        if header.is_control:
            key = bytes(records[0].key or b"") if records else b""
            committed = len(key) >= 4 and int.from_bytes(key[2:4], "big") == 1
            values = pending.pop(header.producer_id, [])
            out += values if committed else []
            continue
        values = [bytes(r.value or b"").decode("utf-8", "replace") for r in records]
        if header.is_transactional:
            pending.setdefault(header.producer_id, []).extend(values)
        else:
            out += values
    return out
