"""The ``share`` family (KIP-932, KIP-1222): a share group's record locks on the broker's clock
against the consumer's own deadlines.

A record a share consumer acquires is locked for it on the broker for the group's
``share.record.lock.duration.ms``; when the lock runs out the record goes back to the group and
its delivery count has gone up; at the group's ``share.delivery.count.limit`` it is archived.
The consumer's ``commitSync`` and ``close`` have deadlines of their own. Each scenario sets the
group's configs itself (IncrementalAlterConfigs on the GROUP resource, the step's
``group_config``), so the same scenario runs on the emulator and on a real Kafka, whose broker
settings are fixed for a run; the lock's floor, group.share.min.record.lock.duration.ms, is
lowered to Kafka's minimum (1 s) on both (conformance/cluster_setup.py, conformance/upstreams.py).

Contracts read both sides: what the members received (delivery counts, which member, when) and
what their calls returned, and the broker's share events (``share_acquire``,
``share_lock_expired``, ``share_renew``, ``share_acknowledge``, ``share_archive``). Those events are
the emulator's view inside the broker: through the proxy in front of a real Kafka they do not
exist, so those contracts are ``broker_internal`` and N/A there (conformance/on_kafka.py); the
wire's own facts (a ShareAcknowledge swallowed, answered) are judged everywhere."""

from __future__ import annotations

from typing import Any

from broker_emu.trace import Kind, TraceEvent
from conformance.model import Contract, Evidence, Operation, Scenario, Timing, Verdict

SHARE = "share groups"   # the capability (conformance/client_capabilities.py)
GROUP = "sg"
LOCK_MS = 30_000         # Kafka's default share.record.lock.duration.ms
# real-time runs divide the lock by at most this: 3 s, above Kafka's floor of 1 s with room for a
# share consumer's join and its 500 ms ShareFetch long poll
MAX_SCALE = 10.0
# a parked ShareFetch is answered when records become available; the client polls it again at
# once. Beyond the run's slack, an answer may come one long poll (share.fetch.max.wait.ms 500 ms,
# real, not scaled) late
LONG_POLL_MS = 500.0
# the first member's application sees the record up to a round of the two members' polls (2 x 50 ms,
# real) after the broker locked it: the lock as the client measures it may look that much short
POLL_ROUND_MS = 250.0
REFERENCES = ("KIP-932", "KIP-1222", "Kafka SharePartition", "Java KafkaShareConsumer")


def _group_config(**more: Any) -> dict[str, Any]:
    return {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": LOCK_MS, **more}


def _produce(value: bytes) -> Operation:
    return Operation("produce", {"topic": "t", "partition": 0, "value": value, "count": 1})


def _value(ev: Evidence, kind: str) -> dict[str, Any] | None:
    o = next((o for o in ev.outcomes if o.operation == kind), None)
    return o.value if o is not None and o.ok and isinstance(o.value, dict) else None


def _missing(ev: Evidence, kind: str) -> Verdict:
    o = next((o for o in ev.outcomes if o.operation == kind), None)
    if o is None:
        return Verdict(False, "no outcome", f"no outcome recorded for {kind}")
    if not o.ok:
        return Verdict(False, f"{o.error_type}", f"{kind} failed: {o.error_type}: {o.error_message}")
    return Verdict(False, "no value", f"{kind} reported {o.value!r}")


def _share(ev: Evidence, kind: str) -> list[TraceEvent]:
    """The broker's share events for the scenario's group (not filtered by client: they name members)."""
    return [e for e in ev.trace if e.kind == kind and (e.details or {}).get("topic") == "t"]


def _holds(event: TraceEvent, offset: int) -> bool:
    return any(first <= offset <= last for first, last in (event.details or {}).get("offsets") or [])


def _lock_ms(ev: Evidence) -> float:
    return LOCK_MS / ev.scale


def _commit_errors(value: Any) -> set[str]:
    """A commitSync's result: the set of per-partition error names ("" when accepted), or the exception's."""
    return set(value.values()) if isinstance(value, dict) else {str(value)}


# -- client side ---------------------------------------------------------------------------------

def redelivered_to_other(kind: str, *, counts: tuple[int, ...] = (2,), at_lock: bool = True) -> Contract:
    """The record the first member received (delivery count 1) came to the other member with a
    delivery count of ``counts``; with ``at_lock``, at a lock's expiry as the client saw it: the
    delivery count less one locks after the first received it (each expiry counts a delivery),
    no sooner, and no later than one long poll and the run's slack after."""

    def check(ev: Evidence) -> Verdict:
        value = _value(ev, kind)
        if value is None:
            return _missing(ev, kind)
        first, second = value.get("first") or [], value.get("second") or []
        if not first:
            return Verdict(False, "nothing received", f"no member received a record: {value.get('error', '')}")
        if not second:
            return Verdict(False, "never redelivered", f"member {first[0]['member']} received offset "
                                                       f"{first[0]['offset']}; the other never received it again")
        a, b = first[0], second[0]
        gap = b["at_ms"] - a["at_ms"]
        figure = (f"offset {b['offset']} to member {b['member']} with delivery count {b['delivery_count']}, "
                  f"{gap:.0f} ms after member {a['member']} got it (lock {_lock_ms(ev):.0f} ms)")
        if (a["delivery_count"], b["offset"]) != (1, a["offset"]) or b["delivery_count"] not in counts \
                or a["member"] == b["member"]:
            return Verdict(False, figure, f"{figure}: expected offset {a['offset']} with delivery count "
                                          f"{' or '.join(map(str, counts))} at the other member")
        if at_lock:
            want = (b["delivery_count"] - 1) * _lock_ms(ev)
            low, high = want - POLL_ROUND_MS - ev.slack_ms, want + LONG_POLL_MS + ev.slack_ms
            if not low <= gap <= high:
                return Verdict(False, figure, f"{figure}: expected between {low:.0f} and {high:.0f} ms",
                               Timing(gap, want))
            return Verdict(True, figure, timing=Timing(gap, want))
        return Verdict(True, figure)

    return Contract(f"the record redelivered to the other member, delivery count {' or '.join(map(str, counts))}"
                    + (", at a lock's expiry" if at_lock else ""), check)


def renewals_keep_it(kind: str) -> Contract:
    """While the holder renewed its lock, the other member, polling throughout, received nothing;
    every renewal and the final ACCEPT were accepted."""

    def check(ev: Evidence) -> Verdict:
        value = _value(ev, kind)
        if value is None:
            return _missing(ev, kind)
        renewals, stolen = value.get("renewals") or [], value.get("second") or []
        bad = [r for r in renewals if _commit_errors(r.get("commit")) - {""}]
        final = _commit_errors(value.get("first_commit"))
        figure = f"{len(renewals)} renewal(s), {len(stolen)} record(s) to the other member, final commit {sorted(final)}"
        if not value.get("first"):
            return Verdict(False, figure, f"no member received a record: {value.get('error', '')}")
        if not renewals or stolen or bad or final - {""}:
            return Verdict(False, figure, f"{figure}; refused renewals: {bad}" if bad else figure)
        return Verdict(True, figure)

    return Contract("RENEW keeps the record: no redelivery, every acknowledgement accepted", check)


def call_returns_at(kind: str, field: str, deadline_ms: float, *, early_ms: float = 0.0, late_ms: float = 0.0,
                    errors: set[str] | None = None) -> Contract:
    """A call timed inside the step (``field``: its elapsed ms) returned at its deadline
    (``deadline_ms`` unscaled), no sooner than ``early_ms`` before and no later than ``late_ms``
    (unscaled) and the run's slack after; ``errors``: what its result may name."""

    def check(ev: Evidence) -> Verdict:
        value = _value(ev, kind)
        if value is None:
            return _missing(ev, kind)
        got, want = float(value.get(f"{field}_ms", -1)), deadline_ms / ev.scale
        result = value.get(field)
        figure = f"{field} returned after {got:.0f} ms of {want:.0f} ms: {result!r}"
        low, high = want - early_ms / ev.scale - ev.slack_ms, want + late_ms / ev.scale + ev.slack_ms
        if got < 0:
            return Verdict(False, "not called", f"{field} was never called: {value.get('error', '')}")
        if errors is not None and not _commit_errors(result) <= errors:
            return Verdict(False, figure, f"{figure}: expected {sorted(errors)}")
        if not low <= got <= high:
            return Verdict(False, figure, f"{figure}: expected between {low:.0f} and {high:.0f} ms", Timing(got, want))
        return Verdict(True, figure, timing=Timing(got, want))

    return Contract(f"{field.replace('_', ' ')} returns at its deadline", check)


def close_within(kind: str, deadline_ms: float) -> Contract:
    """close(timeout) returned without an error, within its deadline (the run's slack allowed)."""

    def check(ev: Evidence) -> Verdict:
        value = _value(ev, kind)
        if value is None:
            return _missing(ev, kind)
        got, want = float(value.get("close_ms", -1)), deadline_ms / ev.scale
        figure = f"close returned after {got:.0f} ms of {want:.0f} ms: {value.get('close')!r}"
        if not value.get("first"):
            return Verdict(False, figure, "the member received no record to acknowledge")
        if value.get("close") != "" or not 0 <= got <= want + ev.slack_ms:
            return Verdict(False, figure, f"{figure}: expected a clean close within its deadline", Timing(got, want))
        return Verdict(True, figure, timing=Timing(got, want))

    return Contract("close(timeout) sends the pending acknowledgement and returns within its deadline", check)


def poison_archived(kind: str, limit: int) -> Contract:
    """The record the member releases each time came ``limit`` times, delivery counts 1..limit,
    and never again; the good record came once."""

    def check(ev: Evidence) -> Verdict:
        value = _value(ev, kind)
        if value is None:
            return _missing(ev, kind)
        deliveries = value.get("deliveries") or []
        poison = [d["delivery_count"] for d in deliveries if bytes(d["value"] or b"").startswith(b"poison")]
        good = [d["delivery_count"] for d in deliveries if not bytes(d["value"] or b"").startswith(b"poison")]
        figure = f"poison record delivered with counts {poison}, the other with {good}"
        if poison != list(range(1, limit + 1)) or good != [1]:
            return Verdict(False, figure, f"{figure}: expected {list(range(1, limit + 1))} and [1] "
                                          f"(share.delivery.count.limit {limit})")
        return Verdict(True, figure)

    return Contract(f"a released record delivered {limit} times, then no more", check)


# -- server side ---------------------------------------------------------------------------------

def _internal(name: str, check: Any) -> Contract:
    return Contract(name, check, side="server", broker_internal=True)


def lock_expires_at_deadline(offset: int = 0, *, count: int = 2, or_disconnect: bool = False) -> Contract:
    """The lock of the first acquisition of ``offset`` expired at its deadline (acquisition + lock,
    on the cluster clock), and only then was it acquired again, with delivery count ``count``
    (SharePartition's AcquisitionLockTimerTask), by whichever member had a ShareFetch waiting: a
    KafkaShareConsumer keeps one in flight while its application processes, so it may be the
    stalled member itself (the figure says which). ``or_disconnect``: the lock may also end before
    its deadline, when the connection that opened the holder's share session closes (a client that
    gives up on its request closes it): Kafka then releases the member's records at once
    (ShareSessionCache's ClientConnectionDisconnectListener), and the emulator does too."""

    def check(ev: Evidence) -> Verdict:
        acquires = [e for e in _share(ev, Kind.SHARE_ACQUIRE) if _holds(e, offset)]
        expiries = [e for e in _share(ev, Kind.SHARE_LOCK_EXPIRED) if _holds(e, offset)]
        if or_disconnect and acquires:   # the holder's share session ended with its connection, before the lock
            released = [e for e in _share(ev, Kind.SHARE_RELEASE) if _holds(e, offset)
                        and e.details.get("reason") == "disconnect" and e.t_ms >= acquires[0].t_ms]
            closed = [e.t_ms for e in ev.trace if e.kind == Kind.CONN_CLOSE]
            if released and (not expiries or released[0].t_ms < expiries[0].t_ms):
                first, gone = acquires[0], released[0]
                figure = (f"lock of {first.details['lock_duration_ms']} ms from {first.details['locked_at_ms']:.0f} ms "
                          f"ended at {gone.t_ms:.0f} ms, {first.details['lock_deadline_ms'] - gone.t_ms:.0f} ms early: "
                          "the holder's connection closed")
                # the release follows the close in the connection's own teardown (the same step in
                # virtual time; a few ms later in real time)
                if not any(0 <= gone.t_ms - t <= ev.slack_ms for t in closed) or gone.t_ms > first.details["lock_deadline_ms"]:
                    return Verdict(False, figure, f"{figure}, but no connection closed then, or after the deadline")
                return _acquired_again(acquires, gone, first.details, figure, count)
        if not acquires or not expiries:
            return Verdict(False, f"{len(acquires)} acquire(s), {len(expiries)} expiry(ies)",
                           f"offset {offset}: no acquisition and expiry in the trace")
        first, expiry = acquires[0], expiries[0]
        d = first.details
        late = expiry.t_ms - d["lock_deadline_ms"]
        figure = (f"lock of {d['lock_duration_ms']} ms from {d['locked_at_ms']:.0f} ms expired at {expiry.t_ms:.0f} ms "
                  f"({late:+.1f} ms)")
        if round(d["lock_deadline_ms"] - d["locked_at_ms"]) != round(_lock_ms(ev)) or not 0 <= late <= ev.slack_ms:
            return Verdict(False, figure, f"{figure}: expected a lock of {_lock_ms(ev):.0f} ms expiring at its deadline")
        verdict = _acquired_again(acquires, expiry, d, figure, count)
        if verdict.passed:
            return Verdict(True, verdict.figure, timing=Timing(expiry.t_ms - d["locked_at_ms"], _lock_ms(ev)))
        return verdict
    name = ("the lock expires at its deadline on the broker's clock (or ends earlier with the holder's connection), "
            "and only then is the record acquired again" if or_disconnect else
            "the lock expires at its deadline on the broker's clock, and only then is the record acquired again")
    return _internal(name, check)


def _acquired_again(acquires: list[TraceEvent], end: TraceEvent, d: dict[str, Any], figure: str, count: int) -> Verdict:
    """The record acquired again only once its lock ended (``end``), with delivery count ``count``."""
    again = next((e for e in acquires[1:] if e.t_ms >= end.t_ms), None)
    early = [e for e in acquires[1:] if e.t_ms < end.t_ms]
    if early:
        return Verdict(False, figure, f"{figure}: acquired again at {early[0].t_ms:.0f} ms, before the lock ended")
    if again is None:
        return Verdict(False, figure, f"{figure}: never acquired again")
    who = "another member" if again.details["member"] != d["member"] else "the same member"
    figure += f"; acquired again {again.t_ms - end.t_ms:.0f} ms later by {who}, counts {again.details['delivery_counts']}"
    if again.details["delivery_counts"] != [count]:
        return Verdict(False, figure, f"{figure}: expected delivery count {count}")
    return Verdict(True, figure)


def accepted_by_the_last_holder(offset: int = 0) -> Contract:
    """The record was accepted once, by the member that acquired it last: the first member's late
    acknowledgement changed nothing. Kafka 4.4 takes it silently once the record is behind the
    start offset (SharePartition.acknowledge skips a batch wholly below it), so the first member's
    commitSync may well report success: the figure shows what it got."""

    def check(ev: Evidence) -> Verdict:
        accepted = [e for e in _share(ev, Kind.SHARE_ACKNOWLEDGE) if _holds(e, offset)]
        acquires = [e for e in _share(ev, Kind.SHARE_ACQUIRE) if _holds(e, offset)]
        value = _value(ev, "share_lock_expires") or {}
        late = f"; the first member's late commitSync: {sorted(_commit_errors(value.get('first_commit')))}"
        figure = f"{len(accepted)} accept(s) of offset {offset}" + late
        if not acquires or len(accepted) != 1 or accepted[0].details["member"] != acquires[-1].details["member"]:
            return Verdict(False, figure, f"{figure}: expected one accept, by the member that acquired it last")
        return Verdict(True, figure)

    return _internal("accepted once, by the member that held it last: the late acknowledgement changes nothing", check)


def renewed_never_expired(offset: int = 0) -> Contract:
    """Each RENEW set a new deadline a lock from the broker's reading of the clock, and no lock
    of ``offset`` expired; the record ended accepted."""

    def check(ev: Evidence) -> Verdict:
        renews = [e for e in _share(ev, Kind.SHARE_RENEW) if _holds(e, offset)]
        expiries = [e for e in _share(ev, Kind.SHARE_LOCK_EXPIRED) if _holds(e, offset)]
        accepted = [e for e in _share(ev, Kind.SHARE_ACKNOWLEDGE) if _holds(e, offset)]
        figure = f"{len(renews)} renewal(s), {len(expiries)} expiry(ies), {len(accepted)} accept(s)"
        wrong = [e for e in renews if round(e.details["lock_deadline_ms"] - e.details["locked_at_ms"]) != round(_lock_ms(ev))]
        if not renews or expiries or len(accepted) != 1 or wrong:
            return Verdict(False, figure, figure + (f"; renewals with another lock: {wrong}" if wrong else ""))
        return Verdict(True, figure)

    return _internal("each RENEW restarts the lock; no lock expires", check)


def archived_at_limit(offset: int, limit: int) -> Contract:
    def check(ev: Evidence) -> Verdict:
        archived = [e for e in _share(ev, Kind.SHARE_ARCHIVE) if _holds(e, offset)]
        figure = ", ".join(f"{e.details['reason']} at counts {e.details.get('delivery_counts')}" for e in archived) or "none"
        acquires = [e for e in _share(ev, Kind.SHARE_ACQUIRE) if _holds(e, offset)]
        if len(archived) != 1 or archived[0].details["reason"] != "delivery_count_limit" or len(acquires) != limit:
            return Verdict(False, f"archived: {figure}; {len(acquires)} acquisition(s)",
                           f"offset {offset}: archived {figure}, acquired {len(acquires)} times; expected archived "
                           f"at delivery_count_limit after {limit} acquisitions")
        return Verdict(True, f"archived at delivery count {limit} (share.delivery.count.limit)")

    return _internal(f"archived at share.delivery.count.limit ({limit})", check)


def accepted_once(offset: int = 0) -> Contract:
    def check(ev: Evidence) -> Verdict:
        accepted = [e for e in _share(ev, Kind.SHARE_ACKNOWLEDGE) if _holds(e, offset)]
        expiries = [e for e in _share(ev, Kind.SHARE_LOCK_EXPIRED) if _holds(e, offset)]
        figure = f"{len(accepted)} accept(s), {len(expiries)} expiry(ies) of offset {offset}"
        if len(accepted) != 1 or expiries:
            return Verdict(False, figure, f"{figure}: expected it accepted once, no lock running out")
        return Verdict(True, figure)

    return _internal("the pending acknowledgement reaches the broker: accepted once", check)


def never_accepted(offset: int = 0) -> Contract:
    def check(ev: Evidence) -> Verdict:
        accepted = [e for e in _share(ev, Kind.SHARE_ACKNOWLEDGE) if _holds(e, offset)]
        figure = f"{len(accepted)} accept(s) of offset {offset}"
        return Verdict(not accepted, figure, f"{figure}: the acknowledgement was swallowed, yet accepted")

    return _internal("the swallowed acknowledgement never accepted the record", check)


def ack_swallowed() -> Contract:
    """On the wire: a request carrying the client's acknowledgement (a ShareAcknowledge, or a
    ShareFetch with acknowledgement batches) reached the broker (or the proxy) and its answer was
    swallowed by the scenario's black hole, which matches only such requests."""

    def check(ev: Evidence) -> Verdict:
        holes = [e.api for e in ev.trace if e.kind == Kind.FAULT_APPLIED and e.api in ("ShareAcknowledge", "ShareFetch")]
        figure = f"{len(holes)} request(s) carrying acknowledgements black-holed" + (
            f" ({', '.join(sorted(set(holes)))})" if holes else "")
        return Verdict(bool(holes), figure, "no acknowledgement was black-holed: the client never sent one")

    return Contract("the acknowledgement reached the broker and was black-holed", check, side="server")


def ack_answered(api: str = "ShareAcknowledge") -> Contract:
    def check(ev: Evidence) -> Verdict:
        sent = [e for e in ev.trace if e.kind == Kind.SEND and (e.api or "") == api]
        figure = f"{len(sent)} {api} answer(s)"
        return Verdict(bool(sent), figure, f"no {api} was answered: the pending acknowledgement never went out")

    return Contract(f"a {api} carried the pending acknowledgement and was answered", check, side="server")


# -- the scenarios -------------------------------------------------------------------------------

# every request that carries acknowledgements: a ShareAcknowledge, and a ShareFetch with acknowledgement
# batches (KIP-932 allows both; franz-go's FlushAcks rides on a ShareFetch when one is due, and its close
# on the final-epoch ShareFetch), so the acknowledgements never arrive whichever way a client sends them
_BLACK_HOLE_ACKS = {"match": {"acknowledgements": True}, "action": {"type": "black_hole"}}
COMMIT_TIMEOUT_S = 10.0
CLOSE_TIMEOUT_S = 10.0
CLOSE_DELAY_MS = 3_000
DELIVERY_LIMIT = 3
_COMMON: dict[str, Any] = dict(family="share", references=REFERENCES, max_scale=MAX_SCALE, needs=(SHARE,),
                               client_config={"request.timeout.ms": 30_000})

SHARE_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        id="share.lock-expires-redelivered",
        title="Processing outlives the record's lock: at the lock's expiry the record goes back to the group and "
              "another member processes it again",
        teaching=("Two members of a share group; one receives the record (delivery count 1) and processes it for "
                  "75 s without polling, longer than the group's share.record.lock.duration.ms (30 s, Kafka's "
                  "default). The lock is the broker's clock, not the consumer's: at the lock's deadline the broker "
                  "makes the record available again, and the other member, polling all along, receives it with "
                  "delivery count 2. (Java's KafkaShareConsumer keeps a ShareFetch in flight while its application "
                  "processes: the stalled member itself may win the record back at that expiry and hold it, "
                  "unpolled, to the next, and the other member gets it at the second expiry, delivery count 3.) When the first member finishes and accepts, nothing it sends changes the "
                  "record: the other member accepted it already, and Kafka 4.4 takes an acknowledgement of "
                  "records behind the share partition's start offset silently (SharePartition.acknowledge skips "
                  "the batch), so the late commitSync may even report success. The record was processed twice; "
                  "a share group's delivery is at least once, and the lock is the bound on processing time."),
        steps=(_produce(b"slow-0"), Operation("share_lock_expires", {
            "topic": "t", "group": GROUP, "group_config": _group_config(), "process_ms": 75_000,
            "max_ms": 60_000})),
        # KafkaShareConsumer fetches on in the background while its application processes: the stalled member
        # may win the record back at the first expiry (count 2) and hold it, unpolled, to the second (count 3)
        contracts=(redelivered_to_other("share_lock_expires", counts=(2, 3)), lock_expires_at_deadline(),
                   accepted_by_the_last_holder()),
        **_COMMON),
    Scenario(
        id="share.renew-keeps-the-lock",
        title="RENEW acknowledgements keep the record's lock: processing three times the lock, no redelivery",
        teaching=("As before, one member processes its record for longer than the lock (75 s against 30 s), but "
                  "every 10 s it acknowledges the record with RENEW (KIP-1222) and commits: the broker gives it "
                  "a new lock from that moment, and the answer carries AcquisitionLockTimeoutMs. The lock never "
                  "runs out, the other member polling all along receives nothing, and the final ACCEPT is taken. "
                  "RENEW is how a slow consumer says 'still working' without the broker's clock deciding for it."),
        steps=(_produce(b"slow-0"), Operation("share_renew", {
            "topic": "t", "group": GROUP, "group_config": _group_config(), "process_ms": 75_000, "renew_ms": 10_000,
            "max_ms": 60_000})),
        contracts=(renewals_keep_it("share_renew"), renewed_never_expired()),
        **_COMMON),
    Scenario(
        id="share.ack-black-holed",
        title="ShareAcknowledge black-holed: commitSync returns at its deadline, the record goes back (at the lock's "
              "expiry, or with the member's connection) and is redelivered, delivery count 2",
        teaching=("A member accepts its record and commits with commitSync(10 s), but every acknowledgement is "
                  "swallowed: nothing answers a ShareAcknowledge, nor a ShareFetch that carries acknowledgements. The call is bounded by its own deadline (KIP-266's rule, which the "
                  "share consumer keeps): it returns at 10 s, its result a timeout, not an acceptance. On the "
                  "broker the record is still acquired: it goes back to the group at the lock's deadline (30 s "
                  "after it was handed out), or sooner if the member's connection closes (a client that gives up "
                  "on its request closes it, and Kafka then ends the member's share session and releases what it "
                  "holds), and the other member receives it with delivery count 2. An acknowledgement that never "
                  "arrives is the same as none."),
        steps=(_produce(b"lost-ack-0"), Operation("share_ack_black_holed", {
            "topic": "t", "group": GROUP, "group_config": _group_config(), "close_ms": 10_000, "max_ms": 60_000},
            timeout_s=COMMIT_TIMEOUT_S)),
        faults=(_BLACK_HOLE_ACKS,),
        contracts=(call_returns_at("share_ack_black_holed", "first_commit", COMMIT_TIMEOUT_S * 1000, early_ms=100,
                                   late_ms=1000, errors={"TimeoutException"}),
                   redelivered_to_other("share_ack_black_holed", at_lock=False), ack_swallowed(),
                   lock_expires_at_deadline(or_disconnect=True), never_accepted()),
        **_COMMON),
    Scenario(
        id="share.delivery-limit-archives",
        title=f"A poison record released each time is archived at share.delivery.count.limit ({DELIVERY_LIMIT})",
        teaching=(f"The group's share.delivery.count.limit is {DELIVERY_LIMIT}. The member releases the poison "
                  "record each time it comes (RELEASE: it goes back at once, its delivery count kept) and accepts "
                  f"the record after it. The poison record comes {DELIVERY_LIMIT} times, delivery counts 1 to "
                  f"{DELIVERY_LIMIT}; at the last release the broker archives it instead of making it available "
                  "(SharePartition's InFlightState.tryUpdateState), and it never comes again. The limit is what "
                  "keeps one bad record from looping forever; the same count goes up when a lock times out."),
        steps=(_produce(b"poison-0"), _produce(b"ok-1"), Operation("share_delivery_limit", {
            "topic": "t", "group": GROUP, "group_config": _group_config(**{"share.delivery.count.limit": DELIVERY_LIMIT}),
            "watch_ms": 20_000, "max_ms": 60_000})),
        contracts=(poison_archived("share_delivery_limit", DELIVERY_LIMIT), archived_at_limit(0, DELIVERY_LIMIT)),
        **_COMMON),
    Scenario(
        id="share.close-with-pending-acks",
        title="close(timeout) with an acknowledgement pending: it is sent and answered within the deadline",
        teaching=("A member accepts its record but does not commit, then closes with close(10 s). Its pending "
                  "acknowledgement must not be lost: close sends it (ShareAcknowledge, ending the share session) "
                  "and waits for the answer, which the broker delays by 3 s, within the close's deadline. The "
                  "record is accepted once and never redelivered."),
        steps=(_produce(b"pending-0"), Operation("share_close_pending", {
            "topic": "t", "group": GROUP, "group_config": _group_config(), "max_ms": 60_000},
            timeout_s=CLOSE_TIMEOUT_S)),
        faults=({"match": {"api": "ShareAcknowledge"}, "action": {"type": "delay_response", "ms": CLOSE_DELAY_MS}},),
        contracts=(close_within("share_close_pending", CLOSE_TIMEOUT_S * 1000), ack_answered(), accepted_once()),
        **_COMMON),
    Scenario(
        id="share.close-acks-black-holed",
        title="close(timeout) with an acknowledgement pending and ShareAcknowledge black-holed: close returns at "
              "its deadline",
        teaching=("As before, but nothing answers a request that carries acknowledgements (a ShareAcknowledge, or a "
                  "final-epoch ShareFetch carrying them, as franz-go's close sends). close(10 s) sends the pending acknowledgement "
                  "and waits for it no longer than its deadline: it returns at 10 s. The broker never took the "
                  "acknowledgement: the record goes back to the group when the member leaves or its lock runs out."),
        steps=(_produce(b"pending-0"), Operation("share_close_pending", {
            "topic": "t", "group": GROUP, "group_config": _group_config(), "max_ms": 60_000},
            timeout_s=CLOSE_TIMEOUT_S)),
        faults=(_BLACK_HOLE_ACKS,),
        contracts=(call_returns_at("share_close_pending", "close", CLOSE_TIMEOUT_S * 1000, early_ms=100, late_ms=1000),
                   ack_swallowed(), never_accepted()),
        **_COMMON),
)
