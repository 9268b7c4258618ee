"""The scenario catalogue. Times are Kafka's real defaults (ms); real-time clients run them
divided by the runner's scale factor, our client in virtual time at full length."""

from __future__ import annotations

from broker_emu.trace import Kind
from broker_emu.trace_reading import first_to_give_up
from conformance import contracts as C
from conformance.model import SILENT_MEMBER, Contract, Evidence, Operation, Scenario, Verdict
from conformance.scenario_defaults import API_TIMEOUT, DELIVERY_TIMEOUT, PRODUCE, REQUEST_TIMEOUT
from conformance.scenarios_admin import ADMIN_SCENARIOS
from conformance.scenarios_failover import FAILOVER_SCENARIOS
from conformance.scenarios_kip848 import KIP848_SCENARIOS
from conformance.scenarios_rebootstrap import REBOOTSTRAP_SCENARIOS
from conformance.scenarios_security import SECURITY_SCENARIOS
from conformance.scenarios_share import SHARE_SCENARIOS
from conformance.scenarios_txn import TXN_SCENARIOS
from conformance.scenarios_txn_late import TXN_LATE_SCENARIOS


def _data_kept() -> Contract:
    def check(ev: Evidence) -> Verdict:
        kept = (ev.cluster or {}).get("log_end_offsets", {}).get("t-0", 0)
        return Verdict(kept >= 1, f"{kept} record batch(es) in the leader's log",
                       "" if kept else "the timed-out produce left nothing in the log")
    return Contract("data stays in the leader's log", check, side="server")


def _first_timeout_is_a_configured_one() -> Contract:
    """Broker and client race (Kafka's Sender puts request.timeout.ms in timeout_ms): the broker's
    purgatory expires timeout_ms after the append, the client drops the connection
    request.timeout.ms after sending. Whichever fires first must fire at its own setting; the figure says who won."""

    def check(ev: Evidence) -> Verdict:
        first = first_to_give_up(ev.events())
        if first.stay is None:
            return Verdict(False, message="no produce entered the purgatory")
        want, got = first.stay.timeout_ms or 0.0, first.after_ms or 0.0
        if first.who == "client":
            ok = got >= want * 0.8 - 50
            return Verdict(ok, f"client gave up first, {got:.0f} ms after the append (timeout_ms {want:.0f})",
                           "" if ok else f"the client dropped the connection after {got:.0f} ms, well before timeout_ms {want:.0f}")
        if first.who == "none":
            return Verdict(False, "nobody timed out", "the parked produce neither expired nor was abandoned")
        ok = abs(got - want) <= max(5.0, 0.02 * want)
        return Verdict(ok, f"broker answered REQUEST_TIMED_OUT after {got:.0f} ms (timeout_ms {want:.0f})",
                       "" if ok else f"the purgatory expired after {got:.1f} ms, not {want:.0f}")
    return Contract("the first timeout to fire is a configured one", check, side="server")


def _no_purgatory() -> Contract:
    def check(ev: Evidence) -> Verdict:
        n = len(ev.events(Kind.PURGATORY_ENTER))
        return Verdict(n == 0, f"{n} parked request(s)", "acks=1 must not wait in the purgatory" if n else "")
    return Contract("acks=1 never waits for followers", check, side="server")



CATALOGUE: tuple[Scenario, ...] = (
    Scenario(
        id="kip19.produce-black-hole",
        family="KIP-19",
        title="A black-holed Produce: disconnect at request.timeout.ms, refresh metadata, retry",
        teaching=("The leader reads the first Produce and never answers. Nothing on the broker side times out: "
                  "the client's own request.timeout.ms must fire, close the connection (the only way to abandon "
                  "a request on an ordered connection), ask for Metadata, and send the batch again on a new "
                  "connection, where it succeeds."),
        references=("KIP-19", "NetworkClient"),
        steps=(PRODUCE,),
        faults=({"match": {"api": "Produce"}, "action": "black_hole", "times": 1},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT, "acks": "all"},
        contracts=(
            C.client_disconnects_after("Produce", "request.timeout.ms", 50, tolerance_fraction=0.15),
            C.metadata_before_retry("Produce"),
            C.outcome_is("produce", ok=True),
        ),
    ),
    Scenario(
        id="kip19.slow-broker-no-reconnect",
        family="KIP-19",
        title="A slow but alive broker (answers after 2/3 of request.timeout.ms) causes no reconnect",
        teaching=("The broker delays its Produce answer by 20 s, below the 30 s request timeout. A correct client "
                  "waits: slowness is not death. Reconnecting here would only add load and duplicates."),
        references=("KIP-19",),
        steps=(PRODUCE,),
        faults=({"match": {"api": "Produce"}, "action": {"type": "delay_response", "ms": 20_000}, "times": 1},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT, "acks": "all"},
        contracts=(C.no_client_disconnect("Produce"), C.outcome_is("produce", ok=True),
                   C.returns_within("produce", "fault.ms", early_ms=50, late_fraction=0.25)),
    ),
    Scenario(
        id="kip91.delivery-timeout-in-flight",
        family="KIP-91",
        title="Every Produce is black-holed: the record fails at delivery.timeout.ms, not before, not after",
        teaching=("Each attempt hangs until the client's request timeout, then the client retries. KIP-91 bounds the "
                  "whole life of the record: at delivery.timeout.ms from the batch's creation the record fails with a "
                  "timeout, however many retries were in progress."),
        references=("KIP-91",),
        steps=(PRODUCE,),
        faults=({"match": {"api": "Produce"}, "action": "black_hole"},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT, "acks": "all"},
        needs=("delivery.timeout.ms",),
        contracts=(C.outcome_is("produce", error="TimeoutException"),
                   C.returns_within("produce", "delivery.timeout.ms", early_ms=100, late_fraction=0.1)),
    ),
    Scenario(
        id="server.purgatory-request-timed-out",
        family="Server side",
        title="Stalled followers: acks=all waits in the purgatory and the broker answers REQUEST_TIMED_OUT",
        teaching=("The leader appends the batch, then parks the Produce until the followers copy it. They never do, "
                  "so at the request's timeout_ms the broker itself answers REQUEST_TIMED_OUT (error 7) - a "
                  "server-side timeout. The record is still in the leader's log. Whether the client sees this "
                  "answer depends on its own request timeout: the broker's clock starts later, after the append."),
        references=("DelayedProduce", "Sender.sendProduceRequests"),
        steps=(Operation("produce", {"topic": "t", "partition": 0, "value": b"hello", "count": 1}),),
        # 5 ms of network and append time before the broker's clock starts (DelayedProduce: after the append)
        faults=({"replication": {"topic": "t", "mode": "stall"}},
                {"match": {"api": "Produce"}, "action": {"type": "delay_request", "ms": 5}}),
        broker_config={"replica.lag.time.max.ms": 1_000_000},
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": 45_000, "acks": "all",
                       "retries": 0},
        contracts=(_first_timeout_is_a_configured_one(), _data_kept()),
    ),
    Scenario(
        id="server.acks1-ignores-stalled-followers",
        family="Server side",
        title="acks=1 is answered at once even when followers are stalled",
        teaching="acks=1 waits for the leader's append only; the purgatory and timeout_ms play no part.",
        references=("ReplicaManager.appendRecords", "DelayedProduce"),
        steps=(PRODUCE,),
        faults=({"replication": {"topic": "t", "mode": "stall"}},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT, "acks": "1",
                       "enable.idempotence": False},
        contracts=(_no_purgatory(), C.outcome_is("produce", ok=True), C.returns_within("produce", 0, late_ms=3_000)),
    ),
    Scenario(
        id="kip266.poll-empty-at-deadline",
        family="KIP-266",
        title="poll(2 s) on an empty partition returns empty at its deadline, without an error",
        teaching=("poll(timeout) never raises a timeout: it returns whatever it has when the time is up. Meanwhile "
                  "the broker holds each Fetch for fetch.max.wait.ms (a long poll), which is not a dead broker."),
        references=("KIP-266",),
        steps=(Operation("poll", {"topic": "t", "partition": 0, "offset": "earliest"}, timeout_s=2.0),),
        needs_faults=False,
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "fetch.max.wait.ms": 500},
        contracts=(C.outcome_is("poll", ok=True), C.returns_within("poll", "timeout", early_ms=20, late_fraction=0.25),
                   C.no_client_disconnect("Fetch", within_ms=1_900, held_ms=500)),
    ),
    Scenario(
        id="kip266.committed-coordinator-black-hole",
        family="KIP-266",
        title="committed(timeout=5 s) against a black-holed coordinator fails at its deadline",
        teaching=("The group coordinator never answers OffsetFetch. A blocking consumer call must not hang: it "
                  "gives up at its deadline with a timeout that says what it was waiting for."),
        references=("KIP-266", "consumer timeout design"),
        steps=(Operation("committed", {"group": "cg", "topic": "t", "partition": 0}, timeout_s=5.0),),
        faults=({"match": {"api": "OffsetFetch"}, "action": "black_hole"},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "default.api.timeout.ms": API_TIMEOUT},
        contracts=(C.outcome_is("committed", error="TimeoutException"),
                   C.returns_within("committed", "timeout", early_ms=20, late_fraction=0.25)),
    ),
)

CATALOGUE += (
    Scenario(
        id="kip19.fetch-black-hole",
        family="KIP-19",
        title="A black-holed Fetch: the consumer disconnects at request.timeout.ms and refreshes metadata",
        teaching=("The leader swallows one Fetch. A Fetch is a long poll (fetch.max.wait.ms), so the client must "
                  "not give up at that time, only at its request timeout; then it drops the connection, asks for "
                  "Metadata and fetches again."),
        references=("KIP-19",),
        steps=(Operation("poll", {"topic": "t", "partition": 0, "offset": "earliest"}, timeout_s=150.0),),
        faults=({"match": {"api": "Fetch"}, "action": "black_hole", "times": 1},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "fetch.max.wait.ms": 500},
        contracts=(C.client_disconnects_after("Fetch", "request.timeout.ms", 50, tolerance_fraction=0.15),
                   C.metadata_before_retry("Fetch")),
    ),
    Scenario(
        id="kip19.leader-move-during-black-hole",
        family="KIP-19",
        title="The leader moves while a Produce hangs: the retry goes to the new leader",
        teaching=("The old leader black-holes the Produce; 10 s later the controller moves leadership. When the "
                  "client's request timeout fires it refreshes metadata and must send the retry to the new leader."),
        references=("KIP-19",),
        steps=(PRODUCE,),
        faults=({"match": {"api": "Produce"}, "action": "black_hole", "times": 1},
                {"move_leader": {"topic": "t", "partition": 0, "broker": "other"}, "when": "Produce", "at_ms": 10_000}),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT, "acks": "all"},
        contracts=(C.retry_on_new_leader("Produce"), C.outcome_is("produce", ok=True)),
    ),
    Scenario(
        id="server.throttle-honoured",
        family="Server side",
        title="A throttled Produce answer: the client waits throttle_time_ms before its next Produce",
        teaching=("Quotas do not fail requests: the broker answers at once with throttle_time_ms and mutes the "
                  "connection for that long (KIP-219). A well-behaved client also holds back its next request."),
        references=("KIP-219", "InFlightRequests"),
        steps=(Operation("produce", {"topic": "t", "partition": 0, "value": b"a", "count": 2}),),
        faults=({"match": {"api": "Produce"}, "action": {"type": "throttle", "ms": 6_000}, "times": 1},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT, "acks": "1"},
        contracts=(C.honours_throttle("Produce", "fault.ms"), C.outcome_is("produce", ok=True)),
    ),
)

def _log_has(records: int) -> Contract:
    def check(ev: Evidence) -> Verdict:
        n = (ev.cluster or {}).get("log_end_offsets", {}).get("t-0", 0)
        return Verdict(n == records, f"{n} record(s) in the log",
                       "" if n == records else f"expected {records} record(s) in the leader's log, found {n} (a duplicate?)")
    return Contract(f"{records} record(s) in the log, no duplicate", check, side="server")


CATALOGUE += (
    Scenario(
        id="kip91.max-block-missing-topic",
        family="KIP-91",
        title="send() to a topic that does not exist (auto-create off) fails at max.block.ms",
        teaching=("Before a record can even join a batch the producer needs the topic's metadata. send() may "
                  "block for it, but never longer than max.block.ms; then it raises a timeout, client side."),
        references=("KIP-91",),
        steps=(Operation("produce", {"topic": "missing", "partition": 0, "value": b"x", "count": 1, "warm_up": False}),),
        broker_config={"auto.create.topics.enable": False},
        needs_faults=False,
        client_config={"max.block.ms": 10_000, "request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT},
        needs=("max.block.ms",),
        # unscaled: librdkafka (which has no max.block.ms: its message.timeout.ms stands in) finds expired
        # records by a scan once a second, 10 % of max.block.ms here but 300 % of it at scale 30, where
        # confluent-kafka and kcat failed by 0.7 s and passed at full length (docs/findings.md)
        max_scale=1.0,
        contracts=(C.outcome_is("produce", error="TimeoutException"),
                   C.returns_within("produce", "max.block.ms", early_ms=100, late_fraction=0.2)),
    ),
    Scenario(
        id="kip91.no-duplicate-after-retry",
        family="KIP-91",
        title="The answer to a Produce is lost after the broker wrote it: the retry must not duplicate",
        teaching=("The broker appends the batch, then the connection drops before the answer. The client cannot "
                  "know the write happened and retries. With idempotence (producer id + sequence) the broker "
                  "recognises the retry and answers with the original offset; without it, the record is in the "
                  "log twice."),
        references=("KIP-91", "idempotent producer"),
        steps=(PRODUCE,),
        faults=({"match": {"api": "Produce"}, "action": "close_after", "times": 1},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT, "acks": "all",
                       "enable.idempotence": True},
        contracts=(C.outcome_is("produce", ok=True), _log_has(1)),
    ),
    Scenario(
        id="kip266.committed-default-api-timeout",
        family="KIP-266",
        title="committed() without a timeout gives up at default.api.timeout.ms",
        teaching=("A blocking consumer call with no explicit timeout is bounded by default.api.timeout.ms "
                  "(60 s by default), never by nothing."),
        references=("KIP-266",),
        steps=(Operation("committed", {"group": "cg", "topic": "t", "partition": 0}, timeout_s=None),),
        faults=({"match": {"api": "OffsetFetch"}, "action": "black_hole"},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "default.api.timeout.ms": API_TIMEOUT},
        needs=("default.api.timeout.ms",),
        contracts=(C.outcome_is("committed", error="TimeoutException"),
                   C.returns_within("committed", "default.api.timeout.ms", early_ms=20, late_fraction=0.15)),
    ),
)


def _consumer_deadline(id_: str, title: str, operation: str, api: str, timeout_s: float | None, args: dict | None = None,
                       teaching: str = "") -> Scenario:
    expected = "timeout" if timeout_s is not None else "default.api.timeout.ms"
    return Scenario(
        id=id_, family="KIP-266", title=title,
        teaching=teaching or (f"The broker never answers {api}. {operation}() must not hang: it gives up at its "
                              f"deadline ({'the timeout it was given' if timeout_s is not None else 'default.api.timeout.ms'}) "
                              "with a timeout that says what it was waiting for."),
        references=("KIP-266", "consumer timeout design"),
        steps=(Operation(operation, {"group": "cg", "topic": "t", "partition": 0, **(args or {})}, timeout_s=timeout_s),),
        faults=({"match": {"api": api}, "action": "black_hole"},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "default.api.timeout.ms": API_TIMEOUT},
        needs=() if timeout_s is not None else ("default.api.timeout.ms",),
        contracts=(C.outcome_is(operation, error="TimeoutException"),
                   C.returns_within(operation, expected, early_ms=20, late_fraction=0.25)),
    )


CATALOGUE += (
    _consumer_deadline("kip266.position-leader-black-hole", "position(timeout=5 s) against a black-holed leader fails at its deadline",
                       "position", "ListOffsets", 5.0),
    _consumer_deadline("kip266.end-offsets-default-api-timeout", "end_offsets() without a timeout gives up at default.api.timeout.ms",
                       "end_offsets", "ListOffsets", None),
    _consumer_deadline("kip266.offsets-for-times-black-hole", "offsets_for_times(timeout=5 s) against a black-holed leader",
                       "offsets_for_times", "ListOffsets", 5.0, {"timestamp_ms": 0}),
    _consumer_deadline("kip266.commit-sync-coordinator-black-hole",
                       "commit_sync(timeout=5 s) against a black-holed coordinator fails at its deadline",
                       "commit_sync", "OffsetCommit", 5.0, {"offset": 1}),
    _consumer_deadline("kip266.list-topics-black-hole", "list_topics(timeout=5 s) when no broker answers Metadata",
                       "list_topics", "Metadata", 5.0),
    Scenario(
        id="kip266.poll-zero",
        family="KIP-266",
        title="poll(0) returns at once",
        teaching="poll(0) checks what is buffered and returns: it must not wait for the network at all.",
        references=("KIP-266",),
        steps=(Operation("poll", {"topic": "t", "partition": 0, "offset": "earliest"}, timeout_s=0.0),),
        needs_faults=False,
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "fetch.max.wait.ms": 500},
        contracts=(C.outcome_is("poll", ok=True), C.returns_within("poll", 0, late_ms=1_500)),
    ),
    Scenario(
        id="kip266.timeout-zero-attempts-once",
        family="KIP-266",
        title="committed(timeout=0) still goes to the network once (attempt-then-check)",
        teaching=("A deadline is checked only after an attempt fails: even with no time left, the call sends its "
                  "request once, and succeeds if the answer is already at hand. The broker's trace shows one request."),
        references=("KIP-266", "consumer timeout design"),
        steps=(Operation("committed", {"group": "cg", "topic": "t", "partition": 0}, timeout_s=0.0),),
        needs_faults=False,
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "default.api.timeout.ms": API_TIMEOUT},
        contracts=(C.attempted_once(("FindCoordinator", "OffsetFetch"), "OffsetFetch"),),
    ),
    Scenario(
        id="kip266.timeout-zero-warm-attempts-once",
        family="KIP-266",
        title="committed(timeout=0) on a warm consumer sends its OffsetFetch once",
        teaching=("The same call on a consumer that has made it once already, so its connections are up and its "
                  "coordinator is known: with no time left it still sends its OffsetFetch, once, and returns the "
                  "answer if it is at hand. On a cold consumer the single attempt may only open a connection (Java's "
                  "does), so only the requests after the warm-up's answer count."),
        references=("KIP-266", "consumer timeout design"),
        steps=(Operation("committed", {"group": "cg", "topic": "t", "partition": 0, "warm_up": True}, timeout_s=0.0),),
        needs_faults=False,
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "default.api.timeout.ms": API_TIMEOUT},
        contracts=(C.attempted_once_when_warm("OffsetFetch"),),
    ),
    Scenario(
        id="kip266.retries-shrink-to-time-left",
        family="KIP-266",
        title="committed(timeout=5 s) with request.timeout.ms=3 s: the retry gets only the 2 s left",
        teaching=("The first attempt waits request.timeout.ms (3 s) and is abandoned; the retry may wait only what "
                  "is left of the call (2 s), so when the call gives up nothing of it is still in flight (the seed "
                  "design's min rule; Java's consumer keeps request.timeout.ms per request)."),
        references=("KIP-266", "consumer timeout design"),
        steps=(Operation("committed", {"group": "cg", "topic": "t", "partition": 0}, timeout_s=5.0),),
        faults=({"match": {"api": "OffsetFetch"}, "action": "black_hole"},),
        client_config={"request.timeout.ms": 3_000, "default.api.timeout.ms": API_TIMEOUT, "fetch.max.wait.ms": 500},
        # at 30 the retry has 67 ms, less than the run's slack and than a client's own unscaled
        # backoff (kafka-python's 100 ms): the verdict was a coin toss (docs/findings.md)
        max_scale=5.0,
        contracts=(C.outcome_is("committed", error="TimeoutException"),
                   C.returns_within("committed", "timeout", early_ms=20, late_fraction=0.25),
                   C.nothing_outlives_the_call("OffsetFetch", "committed")),
    ),
    Scenario(
        id="kip266.close-timeout",
        family="KIP-266",
        title="close(timeout=2 s) with a black-holed Fetch in flight returns by its deadline, without an error",
        teaching=("close() lets a fetch in flight finish, but never waits past its timeout: then it forces itself "
                  "closed. It never raises a timeout."),
        references=("KIP-266",),
        steps=(Operation("close", {"topic": "t", "partition": 0}, timeout_s=2.0),),
        faults=({"match": {"api": "Fetch"}, "action": "black_hole"},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "fetch.max.wait.ms": 500},
        # KIP-266 bounds close(timeout) from above only: "the maximum time to wait". Java's classic
        # consumer happens to return at the deadline here (Fetcher.maybeCloseFetchSessions waits for its fetch-session
        # close requests, queued behind the black-holed Fetch, until the timer runs out); a client
        # that closes at once keeps the contract too (early_ms: the whole timeout).
        contracts=(C.outcome_is("close", ok=True),
                   C.returns_within("close", "timeout", early_ms=2_000, late_fraction=0.25)),
    ),
    Scenario(
        id="server.joingroup-held",
        family="Server side",
        title="JoinGroup held for the silent member's session: waiting on the broker is not a dead broker",
        teaching=("A first member stops heartbeating. A second member's JoinGroup is held by the coordinator until "
                  "the first is expelled (session.timeout.ms) or rejoins. The wait is longer than request.timeout.ms, "
                  "so a client that used request.timeout.ms for JoinGroup would disconnect and rejoin forever; the "
                  "Java client (and ours) give JoinGroup the rebalance timeout plus 5 s."),
        references=("DelayedJoin", "KIP-266"),
        steps=(Operation("join_group_held", {"group": "held", "topic": "t"}, timeout_s=120.0),),
        # the first member's heartbeats vanish on the wire (a static rule, so the proxy applies it on Kafka too)
        faults=({"match": {"api": "Heartbeat", "client_id": SILENT_MEMBER}, "action": "black_hole"},),
        broker_config={"group.initial.rebalance.delay.ms": 0},
        client_config={"request.timeout.ms": 10_000, "session.timeout.ms": 20_000, "heartbeat.interval.ms": 1_000,
                       "max.poll.interval.ms": 60_000, "fetch.max.wait.ms": 500},
        # the second member must ask within the silent one's session: at 30x that is 667 ms, and
        # a Kafka on two loaded cores answered ~200 ms per request, so in one run of three the
        # first member was expelled before the second's JoinGroup came and nothing was held
        max_scale=10.0,
        contracts=(C.outcome_is("join_group_held", ok=True), C.held_without_disconnect("JoinGroup", "request.timeout.ms")),
    ),
    Scenario(
        id="kip91.config-validation",
        family="KIP-91",
        title="delivery.timeout.ms below linger.ms + request.timeout.ms is refused, naming the three",
        teaching=("A record must be allowed at least one full attempt: delivery.timeout.ms >= linger.ms + "
                  "request.timeout.ms. Set explicitly below that, the producer refuses to start, and says why."),
        references=("KIP-91",),
        steps=(Operation("configure_producer", {}),),
        needs_faults=False,
        client_config={"delivery.timeout.ms": 20_000, "linger.ms": 5, "request.timeout.ms": REQUEST_TIMEOUT},
        needs=("delivery.timeout.ms", "linger.ms"),
        contracts=(C.outcome_is("configure_producer", error="ConfigException"),
                   C.error_names("configure_producer", "delivery.timeout.ms", "linger.ms", "request.timeout.ms")),
    ),
    Scenario(
        id="kip19.late-response-ignored",
        family="KIP-19",
        title="An answer later than request.timeout.ms: the client has moved on; the late answer changes nothing",
        teaching=("The broker answers the first Produce after 35 s, 5 s past the client's request timeout. The client "
                  "closed that connection at 30 s and retried; the late answer has nowhere to go. With idempotence "
                  "the retry is recognised, so the record is in the log once."),
        references=("KIP-19", "KIP-91"),
        steps=(PRODUCE,),
        faults=({"match": {"api": "Produce"}, "action": {"type": "delay_response", "ms": 35_000}, "times": 1},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT, "acks": "all",
                       "enable.idempotence": True},
        contracts=(C.client_disconnects_after("Produce", "request.timeout.ms", 50, tolerance_fraction=0.15),
                   C.outcome_is("produce", ok=True), _log_has(1)),
    ),
)

CATALOGUE += (
    Scenario(
        id="kip19.connection-setup-timeout",
        family="KIP-19",
        title="The leader drops connection attempts: each is abandoned at the setup timeout, which grows (KIP-601)",
        teaching=("Connecting to the leader never completes (a firewall dropping SYNs). No request was sent, so "
                  "request.timeout.ms plays no part: socket.connection.setup.timeout.ms (10 s) abandons the attempt, "
                  "and each following attempt gets twice as long (±20 %), up to socket.connection.setup.timeout.max.ms "
                  "(30 s). The record fails at delivery.timeout.ms, still in the accumulator."),
        references=("KIP-19", "KIP-601", "KIP-91"),
        steps=(PRODUCE,),
        # the leader placed at the start, so that through the proxy a real cluster's leader is broker 1 too
        faults=({"move_leader": {"topic": "t", "partition": 0, "broker": 1}, "at_ms": 0},
                {"match": {"broker": 1}, "action": "drop_connects"}),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT, "acks": "all",
                       "socket.connection.setup.timeout.ms": 10_000, "socket.connection.setup.timeout.max.ms": 30_000,
                       "reconnect.backoff.max.ms": 1_000},
        # librdkafka refuses a socket.connection.setup.timeout.ms under 1000 ms (its CONFIGURATION.md range)
        max_scale=10.0,
        # not through the leader: a client's bootstrap connection to its address is a node of its own
        # (librdkafka's "/bootstrap" broker threads, NetworkClient's negative node ids), whose failures
        # do not grow the leader's setup timeout, and the broker sees both as attempts on one port
        bootstrap_brokers=(0,),
        needs=("socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms"),
        contracts=(C.outcome_is("produce", error="TimeoutException"),
                   C.returns_within("produce", "delivery.timeout.ms", early_ms=100, late_fraction=0.1),
                   C.setup_timeout_grows(1)),
    ),
    Scenario(
        id="server.parked-produce-blocks-the-connection",
        family="Server side",
        title="A parked acks=all Produce holds up the next request on its connection (answers go in order)",
        teaching=("The followers copy with a 10 s lag, so the first acks=all Produce waits in the purgatory. The "
                  "producer sends a second batch on the same connection meanwhile; the broker answers strictly in "
                  "order, so the second waits behind the first even though nothing is wrong with it. This is why a "
                  "client's request timeout counts from sending, queueing included."),
        references=("SocketServer", "DelayedProduce"),
        steps=(Operation("produce_pipelined", {"topic": "t", "partition": 0, "value": b"v", "count": 2}),),
        faults=({"replication": {"topic": "t", "mode": "lag", "lag_ms": 10_000}},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT, "acks": "all",
                       "linger.ms": 0},
        contracts=(C.outcome_is("produce_pipelined", ok=True),
                   C.replies_in_order_behind("Produce", "Produce")),
    ),
)

CATALOGUE += (FAILOVER_SCENARIOS + TXN_SCENARIOS + TXN_LATE_SCENARIOS + KIP848_SCENARIOS + SECURITY_SCENARIOS + ADMIN_SCENARIOS
              + REBOOTSTRAP_SCENARIOS + SHARE_SCENARIOS)
BY_ID = {s.id: s for s in CATALOGUE}
