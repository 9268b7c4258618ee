"""The ``Rebootstrap`` family (KIP-899, KIP-1102): when the brokers a client knows stop helping, a
Kafka 4.x client goes back to its bootstrap.servers; with metadata.recovery.strategy=none it does
not, and its API deadlines still end its calls.

The first two give the client one bootstrap address, broker 0's, and move the partition's leader to
broker 1, so the trace tells the bootstrap broker from a broker the client learnt of. The others give
it a bootstrap address of its own, a front door leading to broker 0 (broker_emu/front_door.py): a
connection through it is traced ``via: bootstrap``, so going back to bootstrap.servers is plain in the
trace, and fault rules can spare it (``match.bootstrap: false``)."""

from __future__ import annotations

from typing import Any

from broker_emu.trace import Kind, TraceEvent
from broker_emu.trace_reading import closed_by
from conformance import contracts as C
from conformance.model import Contract, Evidence, Operation, Scenario, Timing, Verdict
from conformance.scenario_defaults import REQUEST_TIMEOUT

STRATEGY = "metadata.recovery.strategy"
TRIGGER = "metadata.recovery.rebootstrap.trigger.ms"
GONE = "rebootstrap when brokers are gone"     # capabilities (conformance/client_capabilities.py)
REQUIRED = "REBOOTSTRAP_REQUIRED"
BOOTSTRAP = (0,)
LEADER = 1
# the client acts on REBOOTSTRAP_REQUIRED at once (Java's initiateRebootstrap makes the rebootstrap
# due on the next NetworkClient.poll); this much leaves room for one retry backoff before its next
# Metadata request
AT_ONCE_MS = 1000.0


def _rebootstrap_answer(ev: Evidence) -> TraceEvent | None:
    return next((e for e in ev.events(Kind.FAULT_APPLIED)
                 if (e.details.get("action") or {}).get("error") == "REBOOTSTRAP_REQUIRED"), None)


def _open_at(ev: Evidence, event: TraceEvent) -> list[tuple[int | None, int | None]]:
    """The client's connections open when ``event`` happened: (broker, conn). By the trace's order,
    not its times: in virtual time the answer and the closes it causes share one instant."""
    before = ev.events()[:next(i for i, e in enumerate(ev.events()) if e is event)]
    closed = {(e.broker, e.conn) for e in before if e.kind == Kind.CONN_CLOSE}
    return [(e.broker, e.conn) for e in before if e.kind == Kind.CONN_OPEN and (e.broker, e.conn) not in closed]


def _limit_ms(ev: Evidence, within_ms: float) -> float:
    want = within_ms / ev.scale
    return max(want, C.REAL_TIME_FLOOR_MS) + ev.slack_ms if ev.scale > 1 else want + ev.slack_ms


def _next_metadata(ev: Evidence, answer: TraceEvent) -> TraceEvent | None:
    return next((e for e in ev.events(Kind.RECV, "Metadata") if e.t_ms >= answer.t_ms
                 and (e.broker, e.conn, e.correlation_id) != (answer.broker, answer.conn, answer.correlation_id)), None)


def back_to_bootstrap(bootstrap: tuple[int, ...], within_ms: float) -> Contract:
    """After a broker answered Metadata with REBOOTSTRAP_REQUIRED, the client's next Metadata request
    went to a bootstrap broker, within ``within_ms`` (unscaled; real-time runs at least
    REAL_TIME_FLOOR_MS), not to a broker it had learnt of (Java: NetworkClient.DefaultMetadataUpdater,
    Metadata.rebootstrap)."""

    def check(ev: Evidence) -> Verdict:
        answer = _rebootstrap_answer(ev)
        if answer is None:
            return Verdict(False, "never asked", "no Metadata was answered REBOOTSTRAP_REQUIRED: the scenario did not "
                                                 "exercise a rebootstrap")
        nxt = _next_metadata(ev, answer)
        if nxt is None:
            return Verdict(False, "no Metadata after", "the client never asked for Metadata again after "
                                                       f"REBOOTSTRAP_REQUIRED at {answer.t_ms:.0f} ms")
        gap, limit = nxt.t_ms - answer.t_ms, _limit_ms(ev, within_ms)
        figure = f"next Metadata to broker {nxt.broker} {gap:.0f} ms after REBOOTSTRAP_REQUIRED"
        if nxt.broker not in bootstrap:
            return Verdict(False, figure, f"the client asked broker {nxt.broker}, which it had learnt of, not a "
                                          f"bootstrap broker {list(bootstrap)}")
        if gap > limit:
            return Verdict(False, figure, f"{figure}: allowed {limit:.0f} ms")
        return Verdict(True, figure)

    return Contract("Metadata from bootstrap.servers at once after REBOOTSTRAP_REQUIRED", check, side="server",
                    setting=STRATEGY)


def forgets_known_brokers(bootstrap: tuple[int, ...]) -> Contract:
    """Before asking for Metadata again, the client closed every connection it had open to a broker it
    had learnt of (not a bootstrap broker: there a bootstrap connection and a learnt one look alike)
    when REBOOTSTRAP_REQUIRED came (Java: NetworkClient.handleRebootstrap disconnects from them, then
    asks bootstrap.servers). Real-time runs allow their slack: the broker sees the close and the new
    connection's request in either order."""

    def check(ev: Evidence) -> Verdict:
        answer = _rebootstrap_answer(ev)
        if answer is None:
            return Verdict(False, "never asked", "no Metadata was answered REBOOTSTRAP_REQUIRED")
        nxt = _next_metadata(ev, answer)
        if nxt is None:
            return Verdict(False, "no Metadata after", "the client never asked for Metadata again")
        limit = nxt.t_ms + ev.slack_ms
        learnt = [c for c in _open_at(ev, answer) if c[0] not in bootstrap]
        closes = {(e.broker, e.conn): e for e in ev.events(Kind.CONN_CLOSE) if e.t_ms >= answer.t_ms}
        kept = [c for c in learnt if c not in closes or closed_by(closes[c]) != "client" or closes[c].t_ms > limit]
        figure = f"{len(learnt) - len(kept)} of {len(learnt)} learnt-broker connection(s) closed by the client"
        if not learnt:
            return Verdict(False, figure, "no connection to a learnt broker was open when REBOOTSTRAP_REQUIRED came")
        if kept:
            return Verdict(False, figure, f"still open (or not closed by the client) when it asked broker {nxt.broker} "
                                          f"for Metadata at {nxt.t_ms:.0f} ms: "
                                          + ", ".join(f"broker {b} conn {c}" for b, c in kept))
        return Verdict(True, figure)

    return Contract("connections to learnt brokers closed on REBOOTSTRAP_REQUIRED", check, side="server",
                    setting=STRATEGY)


def never_rebootstraps(api: str) -> Contract:
    """With metadata.recovery.strategy=none the client never gives up on the brokers it knows: once
    Metadata starves, it closes no connection while it still sends ``api`` or Metadata (a rebootstrap
    closes them all, at metadata.recovery.rebootstrap.trigger.ms, and a client whose rebootstrap
    forgot the partition's leader stops sending ``api`` but keeps asking for Metadata). Metadata
    must have been starved for it to mean anything: at least one answer named no broker."""

    def check(ev: Evidence) -> Verdict:
        starved = [e for e in ev.events(Kind.FAULT_APPLIED) if (e.details.get("action") or {}).get("type") == "no_brokers"]
        if not ev.events(Kind.RECV, api):
            return Verdict(False, f"{len(starved)} starved Metadata answer(s)", f"the broker never received {api}")
        last = max((e.t_ms for e in [*ev.events(Kind.RECV, api), *ev.events(Kind.RECV, "Metadata")]), default=None)
        if not starved or last is None:
            return Verdict(False, f"{len(starved)} starved Metadata answer(s)",
                           "the scenario did not exercise starvation" if not starved else f"the broker never received {api}")
        # from the first starved answer on: a client may close a connection as it starts (librdkafka drops its
        # bootstrap connection once it knows the brokers), and nothing starved triggers a rebootstrap before
        closes = [e for e in ev.events(Kind.CONN_CLOSE) if closed_by(e) == "client" and starved[0].t_ms <= e.t_ms < last]
        figure = f"{len(starved)} Metadata answer(s) without brokers, {len(closes)} client close(s) while sending {api} or Metadata"
        if closes:
            return Verdict(False, figure, f"the client closed conn {closes[0].conn} on broker {closes[0].broker} at "
                                          f"{closes[0].t_ms:.0f} ms, before its last request at {last:.0f} ms: with "
                                          f"{STRATEGY}=none it must keep the brokers it knows")
        return Verdict(True, figure)

    return Contract(f"no rebootstrap with {STRATEGY}=none", check, side="server", setting=STRATEGY)


_LEADER_ON_1 = {"move_leader": {"topic": "t", "partition": 0, "broker": LEADER}, "at_ms": 0}
_NOT_LEADER = {"type": "error", "error": "NOT_LEADER_OR_FOLLOWER"}
_REBOOTSTRAP = {"type": "error", "error": "REBOOTSTRAP_REQUIRED"}
DELIVERY = 30_000
# the proxy in front of a real Kafka (or kfake) has no bootstrap address of its own to move or spare
# the proxy in front of a real cluster has a front door too (Proxy.open_front_door), which the starvation scenarios
# spare from their faults; what it cannot do is put new brokers behind it
NOT_ON_KAFKA = ("replaces every broker with new ones behind the bootstrap address: a real cluster's broker set cannot "
                "be swapped behind the proxy")
TRIGGER_MS = 5_000
SILENT_REQUEST_TIMEOUT = 10_000
# two records one after the other: the first on the old cluster, the second after it moved
PRODUCE_TWICE = Operation("produce", {"topic": "t", "partition": 0, "value": b"hello", "count": 2})
# no untimed warm-up: its Metadata requests (librdkafka's list_topics) would meet the faults and fail the set-up
PRODUCE = Operation("produce", {"topic": "t", "partition": 0, "value": b"hello", "count": 1, "warm_up": False})

def _via_bootstrap(ev: Evidence) -> set[tuple[int | None, int | None]]:
    return {(e.broker, e.conn) for e in ev.events(Kind.CONN_OPEN) if (e.details or {}).get("via") == "bootstrap"}


def _metadata_through_bootstrap(ev: Evidence, since_ms: float, brokers: set[int] | None = None) -> TraceEvent | None:
    """The first Metadata request through the bootstrap address from ``since_ms`` on (served by one of
    ``brokers``, if given)."""
    via = _via_bootstrap(ev)
    return next((e for e in ev.events(Kind.RECV, "Metadata") if e.t_ms >= since_ms and (e.broker, e.conn) in via
                 and (brokers is None or e.broker in brokers)), None)


def found_through_bootstrap(api: str, trigger_ms: float, *, late_ms: float) -> Contract:
    """After every broker it knew was replaced (the old ones stopped, the bootstrap address moved to
    the new ones: a ``bootstrap_moved`` event), the client asked for Metadata through the bootstrap
    address within ``trigger_ms`` (metadata.recovery.rebootstrap.trigger.ms, scaled with the run) and
    ``late_ms`` (one retry backoff of the client's own, which real-time runs do not scale; they add
    their slack too), then sent ``api`` to a new broker (Java: NetworkClient.DefaultMetadataUpdater.maybeUpdate rebootstraps when no known node is
    available or connection-ready, and at the latest at metadata.recovery.rebootstrap.trigger.ms)."""

    def check(ev: Evidence) -> Verdict:
        moved = ev.events(Kind.BOOTSTRAP_MOVED)
        if not moved:
            return Verdict(False, "never moved", "the bootstrap address was never moved: the scenario did not replace "
                                                 "the brokers (did the first request get answered?)")
        new = {e.broker for e in ev.events(Kind.BROKER_START) if (e.details or {}).get("added") and e.broker is not None}
        stopped = [e for e in ev.events(Kind.BROKER_STOP) if e.broker not in new]
        gone = max((e.t_ms for e in stopped), default=moved[-1].t_ms)
        md = _metadata_through_bootstrap(ev, gone, new)   # not a request the old broker read as it stopped
        if md is None:
            return Verdict(False, "no Metadata through bootstrap", f"the client never asked for Metadata through the "
                                                                   f"bootstrap address after the old brokers stopped at {gone:.0f} ms")
        sent = next((e for e in ev.events(Kind.RECV, api) if e.t_ms >= md.t_ms and e.broker in new), None)
        gap, limit = md.t_ms - gone, trigger_ms / ev.scale + late_ms + ev.slack_ms
        figure = f"Metadata through the bootstrap address (broker {md.broker}) {gap:.0f} ms after the old brokers stopped"
        if gap > limit:
            return Verdict(False, figure, f"{figure}: allowed {limit:.0f} ms", Timing(gap, trigger_ms / ev.scale))
        if sent is None:
            return Verdict(False, figure, f"{figure}, but no {api} reached a new broker {sorted(new)} after it")
        return Verdict(True, f"{figure}; {api} on broker {sent.broker} {sent.t_ms - md.t_ms:.0f} ms later",
                       timing=Timing(gap, trigger_ms / ev.scale))

    return Contract("the cluster found again through bootstrap.servers after every known broker was replaced", check,
                    side="server", setting=STRATEGY)


def starved_since(ev: Evidence) -> TraceEvent | None:
    """The first Metadata a starvation rule swallowed or emptied (``black_hole`` or ``no_brokers``)."""
    return next((e for e in ev.events(Kind.FAULT_APPLIED, "Metadata")
                 if (e.details.get("action") or {}).get("type") in ("black_hole", "no_brokers")), None)


def rebootstraps_at_trigger(trigger_ms: float, *, early_ms: float, late_ms: float, wakes_ms: float = 0.0) -> Contract:
    """Once Metadata starves (its first starved request), the client's next Metadata through the
    bootstrap address comes at metadata.recovery.rebootstrap.trigger.ms (``trigger_ms``, unscaled),
    not before (``early_ms``: the attempt starts as the client sends, a little before the broker reads
    it) and at most ``late_ms`` after (unscaled: one retry backoff, the client's retry.backoff.max.ms,
    which the scenarios name so that a real-time run scales it with the trigger); real-time runs add
    their slack both ways
    (Java: NetworkClient.handleRebootstrap on every poll, DefaultMetadataUpdater.needsRebootstrap:
    ``now - metadataAttemptStartMs > rebootstrapTriggerMs``; an answer naming no broker does not end
    the attempt, handleSuccessfulResponse ignores it). ``wakes_ms`` (unscaled): when the client is sure
    to look again although nothing answers: Java's poll sleeps up to request.timeout.ms while a Metadata
    request is in flight (DefaultMetadataUpdater.maybeUpdate), so with a request never answered it
    rebootstraps at max(trigger, that), the latest allowed."""

    def check(ev: Evidence) -> Verdict:
        since = starved_since(ev)
        if since is None:
            return Verdict(False, "never starved", "no Metadata was starved: the scenario did not exercise the trigger")
        md = _metadata_through_bootstrap(ev, since.t_ms)
        if md is None:
            return Verdict(False, "no Metadata through bootstrap", "the client never asked for Metadata through the "
                                                                   f"bootstrap address after Metadata starved at {since.t_ms:.0f} ms")
        gap, want = md.t_ms - since.t_ms, trigger_ms / ev.scale
        low = want - early_ms / ev.scale - ev.slack_ms
        high = (max(trigger_ms, wakes_ms) + late_ms) / ev.scale + ev.slack_ms
        figure = f"Metadata through the bootstrap address {gap:.0f} ms after Metadata starved (trigger {want:.0f} ms)"
        timing = Timing(gap, want)
        if gap < low:
            return Verdict(False, figure, f"{figure}: before the trigger (at least {low:.0f} ms): the client went back to "
                                          "bootstrap.servers without waiting metadata.recovery.rebootstrap.trigger.ms",
                           timing)
        if gap > high:
            return Verdict(False, figure, f"{figure}: allowed at most {high:.0f} ms", timing)
        return Verdict(True, figure, timing=timing)

    return Contract("back to bootstrap.servers at metadata.recovery.rebootstrap.trigger.ms", check, side="server",
                    setting=TRIGGER)


def _starved_scenario(mode: str) -> Scenario:
    """Metadata starved on the brokers' own addresses (``silent``: never answered; ``no-brokers``:
    answered with the topics and no broker), the bootstrap address spared: the producer's record is
    delivered only if it goes back to bootstrap.servers, at metadata.recovery.rebootstrap.trigger.ms."""
    action = {"type": "black_hole"} if mode == "silent" else {"type": "no_brokers"}
    lifted = {"until_back_through_bootstrap": True}
    common: dict[str, Any] = dict(
        family="Rebootstrap",
        references=("KIP-899", "KIP-1102", "Java NetworkClient.DefaultMetadataUpdater"),
        steps=(PRODUCE,),
        front_door=True,
        faults=(_LEADER_ON_1,
                {"match": {"api": "Produce", "bootstrap": False}, "action": _NOT_LEADER, **lifted},
                {"match": {"api": "Metadata", "bootstrap": False}, "action": action, **lifted}),
        # retry.backoff.max.ms named so that real-time runs scale it with the trigger: a client checks the trigger
        # when its next Metadata attempt is due (Java's DefaultMetadataUpdater.maybeUpdate returns early while
        # the refresh backs off), so its lateness is up to one backoff, which the contract allows (AT_ONCE_MS);
        # left at its unscaled default it was 1 s against a trigger of 0.5 s
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY, "acks": "all",
                       STRATEGY: "rebootstrap", TRIGGER: TRIGGER_MS, "retry.backoff.max.ms": 1000},
        max_scale=10.0,
        needs=(TRIGGER,),
    )
    # silent: a Java client notices the trigger only when its poll wakes, at the latest as the starved request
    # times out; request.timeout.ms of 10 s keeps that window [5 s, 10 s] narrow and the send inside its deadline
    request_timeout = SILENT_REQUEST_TIMEOUT if mode == "silent" else REQUEST_TIMEOUT
    common["client_config"] = {**common["client_config"], "request.timeout.ms": request_timeout}
    common["contracts"] = (C.outcome_is("produce", ok=True),
                           rebootstraps_at_trigger(TRIGGER_MS, early_ms=250, late_ms=AT_ONCE_MS,
                                                   wakes_ms=request_timeout if mode == "silent" else 0.0))
    setting = ("The producer's bootstrap.servers is an address of its own leading to broker 0; broker 1 leads the "
               "partition. On the brokers' own addresses every Produce is answered NOT_LEADER_OR_FOLLOWER, so the "
               "producer wants fresh metadata, and ")
    after = (" Once the client comes back through the bootstrap address the faults are lifted (the bootstrap address "
             "leads to a healthy cluster), so the record is delivered only through a rebootstrap.")
    if mode == "silent":
        return Scenario(
            id="rebootstrap.starved-trigger",
            title="Metadata never answered by the brokers the producer knows: it goes back to bootstrap.servers at "
                  "metadata.recovery.rebootstrap.trigger.ms and its record is delivered",
            teaching=setting + ("every Metadata request there is swallowed. No answer ever helps, but every known "
                                "broker is connected, so nothing says the brokers are gone: only the timer of "
                                "KIP-1102 (metadata.recovery.rebootstrap.trigger.ms, 5 s here, 300 s by default) "
                                "sends a Kafka 4.x client back to bootstrap.servers, counted from when the metadata "
                                "attempt started, and not before. Java's client checks the timer each time its "
                                "network client wakes, and while a Metadata request is in flight it sleeps up to "
                                "request.timeout.ms (10 s here): it goes back between the trigger and the starved "
                                "request's timeout, which the contract allows." + after),
            **common)
    return Scenario(
        id="rebootstrap.no-brokers-some-topics",
        title="Metadata answered with the topics and no broker: the producer still goes back to bootstrap.servers at "
              "metadata.recovery.rebootstrap.trigger.ms and its record is delivered",
        teaching=setting + ("every Metadata request there is answered with the topics and an empty broker list. Java's "
                            "client ignores such an answer (DefaultMetadataUpdater.handleSuccessfulResponse: \"Ignoring "
                            "empty metadata response\", counted as a failed update): it keeps the brokers it knows "
                            "and the metadata attempt goes on, so at metadata.recovery.rebootstrap.trigger.ms (5 s "
                            "here) it rebootstraps. A client that takes the answer as the new broker list forgets "
                            "every broker, and may then have no one left to ask, not even bootstrap.servers: the "
                            "contract holds it to Java's behaviour. librdkafka 2.16 (confluent-kafka) does take it "
                            "as the broker list: it closes every learnt broker's connection and, most times, goes "
                            "back to bootstrap.servers at once (tens of ms, not the trigger); now and then it never "
                            "goes back, and the record times out." + after),
        **common)


REBOOTSTRAP_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        id="rebootstrap.required-answer",
        family="Rebootstrap",
        title="A broker answers Metadata with REBOOTSTRAP_REQUIRED: the producer goes back to bootstrap.servers at "
              "once and its record is delivered",
        teaching=("The producer knows broker 0 only by its bootstrap address; broker 1 leads the partition. The first "
                  "Produce is answered NOT_LEADER_OR_FOLLOWER, so the producer refreshes its metadata, and the broker "
                  "it asks answers that Metadata with REBOOTSTRAP_REQUIRED (KIP-1102, Metadata v13+). A Kafka 4.x client "
                  "drops what it learnt: it closes its connections to the brokers the metadata named and asks "
                  "bootstrap.servers again at once, not after metadata.recovery.rebootstrap.trigger.ms. The answer "
                  "it gets there names the brokers again and the record is delivered."),
        references=("KIP-899", "KIP-1102", "Java NetworkClient.DefaultMetadataUpdater"),
        steps=(PRODUCE,),
        bootstrap_brokers=BOOTSTRAP,
        faults=(_LEADER_ON_1,
                # a few times, each a refresh; whichever broker a refresh reaches answers REBOOTSTRAP_REQUIRED once
                # (broker 0 past the two answers a client's start may take: librdkafka asks for brokers, then the
                # topic), so the scenario does not hang on which broker a client deems least loaded
                {"match": {"api": "Produce"}, "action": _NOT_LEADER, "times": 5},
                *({"match": {"api": "Metadata", "broker": b}, "action": _REBOOTSTRAP, "times": 1} for b in (1, 2)),
                {"match": {"api": "Metadata", "broker": 0}, "action": _REBOOTSTRAP, "times": 1, "after": 2}),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY, "acks": "all",
                       STRATEGY: "rebootstrap"},
        max_scale=10.0,
        needs=(REQUIRED,),
        contracts=(C.outcome_is("produce", ok=True), back_to_bootstrap(BOOTSTRAP, AT_ONCE_MS),
                   forgets_known_brokers(BOOTSTRAP)),
    ),
    Scenario(
        id="rebootstrap.strategy-none-deadline",
        family="Rebootstrap",
        title="metadata.recovery.strategy=none and every known broker starved: no rebootstrap, and "
              "delivery.timeout.ms still ends the send",
        teaching=("After its first Metadata answer every Metadata is answered with no broker (Java ignores such an "
                  "answer: the refresh never ends) and every Produce with NOT_LEADER_OR_FOLLOWER. With "
                  "metadata.recovery.strategy=none the client must not go back to bootstrap.servers, however long "
                  "past metadata.recovery.rebootstrap.trigger.ms (5 s here) it starves: it keeps the brokers it "
                  "knows and their connections. What ends the send is the API's own deadline: the record fails "
                  "with a timeout at delivery.timeout.ms, not before, not after."),
        references=("KIP-899", "KIP-1102", "KIP-91"),
        steps=(PRODUCE,),
        bootstrap_brokers=BOOTSTRAP,
        faults=(_LEADER_ON_1,
                {"match": {"api": "Produce"}, "action": _NOT_LEADER},
                # the first two Metadata answers of broker 0 name the brokers (librdkafka asks twice as it starts: brokers, then the topic), none after them does
                {"match": {"api": "Metadata", "broker": 0}, "action": {"type": "no_brokers"}, "after": 2},
                {"match": {"api": "Metadata", "broker": 1}, "action": {"type": "no_brokers"}},
                {"match": {"api": "Metadata", "broker": 2}, "action": {"type": "no_brokers"}}),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY, "acks": "all",
                       STRATEGY: "none", TRIGGER: 5_000},
        max_scale=10.0,
        needs=(STRATEGY, "delivery.timeout.ms"),
        contracts=(C.outcome_is("produce", error="TimeoutException"),
                   C.returns_within("produce", "delivery.timeout.ms", early_ms=100, late_fraction=0.1),
                   never_rebootstraps("Produce")),
    ),
    Scenario(
        id="rebootstrap.brokers-replaced",
        family="Rebootstrap",
        title="Every broker the producer knew is replaced by new brokers at new addresses: it finds the cluster again "
              "through bootstrap.servers and its second record is delivered",
        teaching=("The producer's bootstrap.servers is an address of its own (a DNS name, a load balancer) leading to "
                  "broker 0. Its first record is delivered; then the operator moves the cluster: new brokers join at "
                  "new addresses, every partition is reassigned onto them, the bootstrap address is moved to them and "
                  "the old brokers stop (meanwhile the old brokers answer nothing, so the producer learns nothing of "
                  "the new ones from them). Every broker the producer knows now refuses its connections. A Kafka 4.x "
                  "client (metadata.recovery.strategy=rebootstrap, the default) goes back to bootstrap.servers as "
                  "soon as no broker it knows is available, not after metadata.recovery.rebootstrap.trigger.ms: "
                  "there it meets the new cluster, and the second record is delivered inside delivery.timeout.ms. "
                  "'As soon as' is when, at the moment it looks, no known broker is connected, connecting or "
                  "ready to be tried: Java's producer keeps reconnecting to the partition's leader, and a broker "
                  "it is connecting to counts as available, so it may not see that moment for a long while; "
                  "metadata.recovery.rebootstrap.trigger.ms (5 s here) bounds it: the client must be back through "
                  "the bootstrap address within the trigger (and one retry backoff) of the old brokers stopping. "
                  "A client that only ever asks the brokers it learnt of never finds it."),
        references=("KIP-899", "KIP-1102", "Java NetworkClient.DefaultMetadataUpdater"),
        steps=(PRODUCE_TWICE,),
        front_door=True,
        not_on_kafka=NOT_ON_KAFKA,
        faults=({"move_cluster_behind_bootstrap": "Produce"},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY, "acks": "all",
                       STRATEGY: "rebootstrap", TRIGGER: TRIGGER_MS},
        # Java rebootstraps at once only if no known broker is available or connecting at the moment it looks;
        # its sender keeps reconnecting to the leader, so in real time it took 0.9 s, 5.7 s, 5.8 s and, once,
        # more than 15 s without the trigger: its reconnect backoffs (unscaled) need room, and the trigger is
        # the bound the contract holds it to
        max_scale=2.0,
        needs=(GONE,),
        contracts=(C.outcome_is("produce", ok=True), found_through_bootstrap("Produce", TRIGGER_MS, late_ms=AT_ONCE_MS)),
    ),
    *(_starved_scenario(mode) for mode in ("silent", "no-brokers")),
)
