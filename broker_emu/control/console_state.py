"""What the web console shows, as one JSON snapshot of the cluster (``GET /console/state``, and
every few hundred milliseconds on ``GET /console/events``): brokers, topics and partitions,
groups, connections with the requests they have in flight (age against the request's own
timeout), the operations parked in the purgatories (time left before each expires), each share
partition's locked records (time left on each lock, KIP-932) and the fault rules with their hit
counts. Read-only: building it changes nothing.

The target is the cluster (``broker_emu.cluster.Cluster``); anything lacking a part (the proxy
has no purgatory) shows that part empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from client.protocol import ApiKey

if TYPE_CHECKING:
    from broker_emu.control.target import ControlTarget

# a request's own bound on how long the broker may hold it (Produce, Fetch, JoinGroup)
TIMEOUT_FIELDS = ("timeout_ms", "max_wait_ms", "rebalance_timeout_ms")


def console_state(target: ControlTarget) -> dict[str, Any]:
    now_ms = target.now_ms()
    described = target.describe()
    state: dict[str, Any] = {"now_ms": now_ms, **described}
    groups = getattr(target, "groups", None)
    try:
        state["groups"] = groups.describe() if groups is not None else []
    except Exception as exc:  # noqa: BLE001 - a console must not fail for one part; it says why instead
        state["groups"] = {"error": f"{type(exc).__name__}: {exc}"}
    state["transactions"] = _transactions(target)
    state["connections"] = _connections(target, now_ms)
    state["purgatory_ops"] = _purgatory_ops(target, now_ms)
    state["share_locks"] = _share_locks(target)
    return state


def _share_locks(target: ControlTarget) -> list[dict[str, Any]]:
    """Each share partition with records in flight, and its locks: the records one acquisition (or
    RENEW) locked for a member, their delivery counts and the time left before the lock expires
    (``left_ms``, to the deadline the client was told; ``late_ms``, a lock-late fault's extra)."""
    share = getattr(target, "share", None)
    if share is None:
        return []
    now = _clock_ms()
    out = []
    for (group, topic, index), sp in sorted(share.partitions.items()):
        locks: dict[int, dict[str, Any]] = {}
        for offset, rec in sorted(sp.records.items()):
            lock = rec.lock
            if lock is None or rec.state.name != "ACQUIRED":
                continue
            entry = locks.setdefault(id(lock), {
                "member": lock.member, "offsets": [], "delivery_counts": [],
                "lock_ms": round(lock.deadline_ms - lock.start_ms, 1),
                "left_ms": max(0.0, round(lock.deadline_s * 1000 - now, 1)), "late_ms": lock.late_ms})
            entry["offsets"].append(offset)
            entry["delivery_counts"].append(rec.delivery_count)
        if locks or sp.end_offset > sp.start_offset:
            out.append({"group": group, "topic": topic, "partition": index, "start_offset": sp.start_offset,
                        "end_offset": sp.end_offset,
                        "locks": sorted(locks.values(), key=lambda lock: lock["left_ms"])})
    return out


def _transactions(target: ControlTarget) -> list[dict[str, Any]]:
    """Each transactional id the coordinator knows: state, producer id and epoch, partitions, and
    for an open transaction the time left before transaction.timeout.ms aborts it."""
    txn = getattr(target, "txn", None)
    if txn is None:
        return []
    now = txn.now_ms()
    out = []
    for meta in sorted(txn.txns.values(), key=lambda m: m.transactional_id):
        state = getattr(meta.state, "value", str(meta.state))   # Kafka's names: Ongoing, PrepareCommit...
        open_ms = now - meta.start_ms if meta.start_ms >= 0 and state == "Ongoing" else None
        out.append({"transactional_id": meta.transactional_id, "state": state, "producer_id": meta.producer_id,
                    "epoch": meta.epoch, "timeout_ms": meta.timeout_ms,
                    "partitions": sorted(f"{t}-{p}" for t, p in meta.partitions), "groups": sorted(meta.groups),
                    "left_ms": None if open_ms is None else round(meta.timeout_ms - open_ms, 1)})
    return out


def _connections(target: ControlTarget, now_ms: float) -> list[dict[str, Any]]:
    out = []
    for broker in getattr(target, "brokers", {}).values():
        for conn in sorted(getattr(broker, "connections", ()), key=lambda c: c.id):
            inflight = getattr(conn, "inflight", {})   # correlation id -> (api key, arrival ms, body)
            out.append({
                "conn": conn.id, "broker": broker.id, "client_id": conn.client_id, "client_addr": conn.addr,
                "closed": conn.closed,
                "throttled_ms_left": max(0.0, round(getattr(conn, "muted_until_ms", 0.0) - now_ms, 1)),
                "in_flight": [_request(corr, api_key, received_ms, body, now_ms)
                              for corr, (api_key, received_ms, body) in sorted(inflight.items())],
            })
    return out


def _request(corr: int, api_key: int, received_ms: float, body: Any, now_ms: float) -> dict[str, Any]:
    """A request in flight, with its own bound on how long the broker may hold it, if it has one."""
    field = next((f for f in TIMEOUT_FIELDS if f in body), None) if hasattr(body, "keys") else None
    return {"correlation_id": corr, "api": ApiKey(api_key).api_name, "age_ms": round(now_ms - received_ms, 1),
            "timeout_ms": body[field] if field else None, "timeout_field": field}


def _purgatory_ops(target: ControlTarget, now_ms: float) -> list[dict[str, Any]]:
    out = []
    for attr in ("produce_purgatory", "fetch_purgatory", "delete_records_purgatory"):
        purgatory = getattr(target, attr, None)
        if purgatory is None:
            continue
        seen: set[int] = set()
        for ops in list(purgatory.watchers.values()):
            for op in ops:
                if op.completed or id(op) in seen:
                    continue
                seen.add(id(op))
                deadline = op.deadline_s
                ctx = getattr(op, "ctx", None)
                left_ms = None
                if deadline is not None:
                    left_ms = max(0.0, round(deadline * 1000 - _clock_ms(), 1))
                out.append({
                    "purgatory": purgatory.name, "timeout_ms": round(op.timeout_s * 1000, 1), "left_ms": left_ms,
                    "broker": ctx.broker_id if ctx is not None else None, "conn": ctx.conn_id if ctx is not None else None,
                    "client_id": ctx.client_id if ctx is not None else None,
                    "correlation_id": ctx.correlation_id if ctx is not None else None,
                    "waits_for": op.describe(),
                })
    out.sort(key=lambda o: (o["left_ms"] is None, o["left_ms"] or 0.0))
    return out


def _clock_ms() -> float:
    """The scheduler's clock (trio time) in ms: the timers' deadlines are on it."""
    import trio

    return trio.current_time() * 1000
