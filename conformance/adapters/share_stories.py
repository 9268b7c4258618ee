"""The share scenarios' steps (conformance/scenarios_share.py) as stories told once, for either
face of our share consumer: the same two-member stories as the Java adapter's ShareSteps.java,
each a step whose value is the dict the contracts read (who received what and when, what each
timed call returned and how long it took).

A story speaks to a ``Face`` (set the group's configs, open a member) and to its ``Member``s
(subscribe, poll, acknowledge, commit_sync, close), all awaited: the async face's are our
``AsyncShareConsumer``'s own calls in virtual time, the blocking face's are ``ShareConsumer``'s
blocking calls, each run on a worker thread of a real-time trio loop (conformance/adapters/ours_share.py).
Times are read from trio's clock: the cluster's in virtual time, the system's in real time.
Durations in a step's args are Kafka's (unscaled); ``share_args`` divides them by a real-time
run's scale, as the Java adapter does before its program sees them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import trio

from client.errors import KafkaError
from client.share.acknowledgements import AcknowledgeType, ShareRecord
from conformance.adapters.base import scaled_ms
from conformance.adapters.ours_common import error_name
from conformance.model import Operation

SHARE_OPERATIONS = frozenset({"share_lock_expires", "share_renew", "share_ack_black_holed", "share_delivery_limit",
                              "share_close_pending"})
# the Kafka-time durations in a share step's args (and the group's *.ms configs), scaled in real time
SHARE_SCALED_MS = ("process_ms", "renew_ms", "watch_ms", "close_ms")
TICK_S = 0.05   # each poll's timeout while a story waits for records, as ShareSteps.java's TICK


def share_args(step: Operation, scale: float) -> Operation:
    """The step with its Kafka-time durations divided by the run's scale (real ms for the stories)."""
    args = dict(step.args)
    for key in SHARE_SCALED_MS:
        if key in args:
            args[key] = scaled_ms(args[key], scale)
    args["group_config"] = {k: scaled_ms(v, scale) if k.endswith(".ms") else v
                            for k, v in args.get("group_config", {}).items()}
    return replace(step, args=args)


class Member(Protocol):
    """One share consumer of the group, in explicit acknowledgement mode."""

    async def subscribe(self, topics: list[str]) -> None: ...
    async def poll(self, timeout_s: float) -> list[ShareRecord]: ...
    async def acknowledge(self, record: ShareRecord, kind: AcknowledgeType) -> None: ...
    async def commit_sync(self, timeout_s: float) -> dict[Any, KafkaError | None]: ...
    async def close(self, timeout_s: float) -> list[str]: ...
    async def lock_ms(self) -> int | None: ...


class Face(Protocol):
    async def configure_group(self, group: str, config: dict[str, Any]) -> None: ...
    def member(self, group: str, suffix: str) -> AbstractAsyncContextManager[Member]: ...


def _ms(since: float) -> float:
    return round((trio.current_time() - since) * 1000, 3)


def _record(r: ShareRecord, member: str, at_ms: float) -> dict[str, Any]:
    return {"member": member, "offset": r.offset, "partition": r.partition, "at_ms": at_ms,
            "delivery_count": r.delivery_count, "value": r.value}


def _commit_result(results: dict[Any, KafkaError | None]) -> dict[str, str]:
    """As ShareSteps.java reports commitSync: "" per partition when accepted, else the error's name."""
    return {f"{tp.topic}-{tp.partition}": "" if err is None else error_name(err)
            for tp, err in sorted(results.items())}


async def _commit(m: Member, timeout_s: float, start: float, out: dict[str, Any], key: str) -> None:
    t = trio.current_time()
    try:
        out[key] = _commit_result(await m.commit_sync(timeout_s))
    except KafkaError as exc:
        out[key] = error_name(exc)
    out[f"{key}_ms"] = _ms(t)
    out[f"{key}_at_ms"] = _ms(start)


async def _close(m: Member, timeout_s: float) -> None:
    try:
        await m.close(timeout_s)
    except KafkaError:
        pass   # a close that could not send what it held: the story is already told


@dataclass
class Held:
    """The member that received records first, what it received and when."""

    member: Member
    name: str
    raw: list[ShareRecord]
    at: float
    records: list[dict[str, Any]] = field(default_factory=list)


async def _first_to_receive(a: Member, b: Member, start: float, max_s: float) -> Held | None:
    """a and b poll in turn until one receives records (held unacknowledged)."""
    while trio.current_time() - start < max_s:
        for m, name in ((a, "a"), (b, "b")):
            got = await m.poll(TICK_S)
            if got:
                at_ms = _ms(start)
                return Held(m, name, list(got), trio.current_time(), [_record(r, name, at_ms) for r in got])
    return None


Story = Callable[[Face, Operation, "float | None"], Awaitable[dict[str, Any]]]


async def _two_members(face: Face, step: Operation, timeout_s: float | None,
                       body: Callable[[Member, Member, float, Held, dict[str, Any]], Awaitable[None]],
                       close_s: float | None = None) -> dict[str, Any]:
    """Two members subscribe; the first to receive the record holds it; ``body`` tells the rest."""
    a_ = step.args
    max_s = a_.get("max_ms", 30_000) / 1000
    out: dict[str, Any] = {}
    async with face.member(a_["group"], "-a") as a, face.member(a_["group"], "-b") as b:
        try:
            await a.subscribe([a_["topic"]])
            await b.subscribe([a_["topic"]])
            start = trio.current_time()
            held = await _first_to_receive(a, b, start, max_s)
            if held is None:
                out["error"] = "no member received a record within max_ms"
                return out
            out["first"] = held.records
            await body(a, b, start, held, out)
        finally:
            await _close(a, max_s if close_s is None else close_s)
            await _close(b, max_s if close_s is None else close_s)
    return out


async def _ack_all(held: Held, kind: AcknowledgeType) -> None:
    for r in held.raw:
        await held.member.acknowledge(r, kind)


async def lock_expires(face: Face, step: Operation, timeout_s: float | None) -> dict[str, Any]:
    """The holder "processes" the record for ``process_ms`` without polling, longer than its lock;
    the other polls on and receives it again at the lock's expiry. The holder's accept afterwards
    comes too late."""
    max_s, process_s = step.args.get("max_ms", 30_000) / 1000, step.args["process_ms"] / 1000

    async def body(a: Member, b: Member, start: float, held: Held, out: dict[str, Any]) -> None:
        out["lock_ms"] = await held.member.lock_ms() or -1
        other, other_name = (b, "b") if held.member is a else (a, "a")
        until = held.at + process_s
        again: list[dict[str, Any]] = out.setdefault("second", [])
        while not again and trio.current_time() < until:
            for r in await other.poll(TICK_S):
                again.append(_record(r, other_name, _ms(start)))
                await other.acknowledge(r, AcknowledgeType.ACCEPT)
        if again:
            await _commit(other, max_s, start, out, "second_commit")
        await trio.sleep_until(until)
        try:
            await _ack_all(held, AcknowledgeType.ACCEPT)
            await _commit(held.member, max_s, start, out, "first_commit")
        except KafkaError as exc:   # refused by the consumer itself: the record is no longer its to acknowledge
            out["first_commit"] = error_name(exc)

    return await _two_members(face, step, timeout_s, body)


async def renew(face: Face, step: Operation, timeout_s: float | None) -> dict[str, Any]:
    """As lock_expires, but every ``renew_ms`` the holder acknowledges RENEW and commits (the
    renewed record comes back from its next poll, to be acknowledged again); the other member,
    polling throughout, should receive nothing. Then the holder accepts."""
    a_ = step.args
    max_s, process_s, renew_s = a_.get("max_ms", 30_000) / 1000, a_["process_ms"] / 1000, a_["renew_ms"] / 1000

    async def body(a: Member, b: Member, start: float, held: Held, out: dict[str, Any]) -> None:
        other, other_name = (b, "b") if held.member is a else (a, "a")
        until, next_renew = held.at + process_s, held.at + renew_s
        stolen: list[dict[str, Any]] = out.setdefault("second", [])
        renewals: list[dict[str, Any]] = out.setdefault("renewals", [])
        while trio.current_time() < until:
            for r in await other.poll(TICK_S):
                stolen.append(_record(r, other_name, _ms(start)))
                await other.acknowledge(r, AcknowledgeType.RELEASE)
            if next_renew <= trio.current_time() < until:
                await _ack_all(held, AcknowledgeType.RENEW)
                one: dict[str, Any] = {}
                renewals.append(one)
                await _commit(held.member, max_s, start, one, "commit")
                back = await held.member.poll(0.0)
                one["returned"] = [_record(r, held.name, _ms(start)) for r in back]
                if back:
                    held.raw = list(back)
                next_renew += renew_s
        try:
            await _ack_all(held, AcknowledgeType.ACCEPT)
            await _commit(held.member, max_s, start, out, "first_commit")
        except KafkaError as exc:
            out["first_commit"] = error_name(exc)

    return await _two_members(face, step, timeout_s, body)


async def ack_black_holed(face: Face, step: Operation, timeout_s: float | None) -> dict[str, Any]:
    """The holder accepts and commits with commitSync(timeout) while ShareAcknowledge is
    black-holed: the call must return at its deadline. The other member then receives the record
    again when the lock runs out. Closes are bounded by ``close_ms`` (the black hole stays)."""
    max_s = step.args.get("max_ms", 30_000) / 1000

    async def body(a: Member, b: Member, start: float, held: Held, out: dict[str, Any]) -> None:
        await _ack_all(held, AcknowledgeType.ACCEPT)
        await _commit(held.member, max_s if timeout_s is None else timeout_s, start, out, "first_commit")
        other, other_name = (b, "b") if held.member is a else (a, "a")
        again: list[dict[str, Any]] = out.setdefault("second", [])
        end = trio.current_time() + max_s
        while not again and trio.current_time() < end:
            again += [_record(r, other_name, _ms(start)) for r in await other.poll(TICK_S)]

    return await _two_members(face, step, timeout_s, body, close_s=step.args.get("close_ms", 1000) / 1000)


async def delivery_limit(face: Face, step: Operation, timeout_s: float | None) -> dict[str, Any]:
    """One member releases every record whose value starts "poison" and accepts the others, polling
    until ``watch_ms`` passed without a delivery (the first awaited up to ``max_ms``)."""
    a_ = step.args
    max_s, watch_s = a_.get("max_ms", 30_000) / 1000, a_["watch_ms"] / 1000
    out: dict[str, Any] = {"deliveries": [], "commits": []}
    async with face.member(a_["group"], "-a") as c:
        try:
            await c.subscribe([a_["topic"]])
            start = trio.current_time()
            end = start + max_s
            while trio.current_time() < end:
                if out["deliveries"]:
                    end = min(end, start + out["deliveries"][-1]["at_ms"] / 1000 + watch_s)
                got = await c.poll(TICK_S)
                for r in got:
                    out["deliveries"].append(_record(r, "a", _ms(start)))
                    poison = (r.value or b"").startswith(b"poison")
                    await c.acknowledge(r, AcknowledgeType.RELEASE if poison else AcknowledgeType.ACCEPT)
                if got:
                    one: dict[str, Any] = {}
                    out["commits"].append(one)
                    await _commit(c, max_s, start, one, "commit")
        finally:
            await _close(c, max_s)
    return out


async def close_pending(face: Face, step: Operation, timeout_s: float | None) -> dict[str, Any]:
    """One member receives the record, accepts it without committing, and closes with
    close(timeout): the close sends the pending acknowledgement, and returns when it is answered
    or at its deadline. Our close never raises; what it could not do is its report."""
    a_ = step.args
    max_s = a_.get("max_ms", 30_000) / 1000
    out: dict[str, Any] = {"first": []}
    async with face.member(a_["group"], "-a") as c:
        closed = False
        try:
            await c.subscribe([a_["topic"]])
            start = trio.current_time()
            while not out["first"] and trio.current_time() - start < max_s:
                for r in await c.poll(TICK_S):
                    out["first"].append(_record(r, "a", _ms(start)))
                    await c.acknowledge(r, AcknowledgeType.ACCEPT)
            t = trio.current_time()
            out["close_at_ms"] = _ms(start)
            try:
                out["close_report"] = await c.close(max_s if timeout_s is None else timeout_s)
                out["close"] = ""
            except KafkaError as exc:
                out["close"] = error_name(exc)
            closed = True
            out["close_ms"] = _ms(t)
        finally:
            if not closed:
                await _close(c, max_s)
    return out


STORIES: dict[str, Story] = {"share_lock_expires": lock_expires, "share_renew": renew,
                             "share_ack_black_holed": ack_black_holed, "share_delivery_limit": delivery_limit,
                             "share_close_pending": close_pending}


async def tell(face: Face, step: Operation, timeout_s: float | None) -> dict[str, Any]:
    """The group's configs first (IncrementalAlterConfigs on the GROUP resource), then the story."""
    await face.configure_group(step.args["group"], step.args.get("group_config", {}))
    return await STORIES[step.kind](face, step, timeout_s)
