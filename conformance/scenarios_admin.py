"""The ``admin`` family: the server-side timeouts behind admin calls (docs/admin.md). Under KRaft a
CreateTopics' ``timeout_ms`` is the controller's deadline: past it the answer is REQUEST_TIMED_OUT
and nothing is created. DeleteRecords waits in a purgatory (DelayedDeleteRecords) until every
replica's low watermark has moved, at most ``timeout_ms``. In both the client's call deadline and
the broker's deadline are the same number: whose fires first is what a test wants to see."""

from __future__ import annotations

from broker_emu.trace import Kind
from conformance import contracts as C
from conformance.model import Contract, Evidence, Operation, Scenario, Verdict

CREATE = Operation("create_topics", {"topic": "fresh", "partitions": 1, "replication_factor": 3}, timeout_s=30)
DELETE = Operation("delete_records", {"topic": "t", "partition": 0, "offset": -1}, timeout_s=30)


def _client_gave_up(ev: Evidence, api: str) -> tuple[float, float] | None:
    """(the timeout_ms the first ``api`` request carried, how long after it arrived its client
    closed that connection), if the client closed it."""
    recv = next((e for e in ev.events(Kind.RECV, api)), None)
    if recv is None:
        return None
    close = next((e for e in ev.trace if e.kind == Kind.CONN_CLOSE and e.conn == recv.conn and e.t_ms >= recv.t_ms
                  and (e.details or {}).get("closed_by") == "client"), None)
    return None if close is None else (float((recv.details or {}).get("timeout_ms") or 0), close.t_ms - recv.t_ms)


def _within_call(sent: float, want: float, ev: Evidence) -> bool:
    """A deadline given to the broker lies within the call's: more than nothing, no more than the
    call's timeout (Java and ours send the time left, librdkafka and kafka-python the whole)."""
    return 0 < sent <= want + ev.slack_ms


def controller_deadline_expired(api: str, topic: str) -> Contract:
    """The controller's deadline — timeout_ms, within the call — passed before it got to the
    request, and ``topic`` was never created. A client whose own call deadline is that same instant
    may give up first (Java's admin disconnects the node): then the figure says so."""

    def check(ev: Evidence) -> Verdict:
        want = C.expected_ms(ev, "timeout", "create_topics")
        created = any(k.startswith(f"{topic}-") for k in (ev.cluster or {}).get("log_end_offsets", {}))
        hit = next((e for e in ev.events(Kind.CONTROLLER_DEADLINE) if (e.details or {}).get("api") == api), None)
        if hit is not None:
            got, who = float(hit.details["timeout_ms"]), "the controller's deadline passed: timeout_ms"
        else:
            gave_up = _client_gave_up(ev, api)
            if gave_up is None:
                return Verdict(False, message=f"no {api} reached its controller deadline, and its client did not give up")
            got, who = gave_up[0], f"the client gave up first, {gave_up[1]:.0f} ms after sending timeout_ms"
        figure = f"{who} {got:.0f} ms (a {want:.0f} ms call)" + ("; the topic exists" if created else "; nothing created")
        if created:
            return Verdict(False, figure, f"{topic} was created although the deadline passed")
        if not _within_call(got, want, ev):
            return Verdict(False, figure, f"timeout_ms {got:.0f}: not within the {want:.0f} ms call")
        return Verdict(True, figure)

    return Contract("the controller's deadline is the call's time left; nothing is created", check, side="server")


def purgatory_expired(api: str) -> Contract:
    """The request waited in the purgatory and expired there exactly at its timeout_ms, which lies
    within the call — or its client, whose call deadline is the same instant, gave up first (the
    figure says which)."""

    def check(ev: Evidence) -> Verdict:
        enter = next((e for e in ev.events(Kind.PURGATORY_ENTER, api)), None)
        if enter is None:
            return Verdict(False, message=f"no {api} entered the purgatory")
        expire = next((e for e in ev.events(Kind.PURGATORY_EXPIRE, api)), None)
        want = C.expected_ms(ev, "timeout", "delete_records")
        if expire is not None:
            got, who = expire.t_ms - enter.t_ms, "expired in the purgatory"
            sent = float(next((e.details or {}).get("timeout_ms") or 0 for e in ev.events(Kind.RECV, api)))
            if abs(got - sent) > max(ev.slack_ms, 0.05 * sent) or not _within_call(sent, want, ev):
                return Verdict(False, f"parked {got:.0f} ms with timeout_ms {sent:.0f} (a {want:.0f} ms call)",
                               "the purgatory must hold the request exactly its timeout_ms, within the call")
        else:
            gave_up = _client_gave_up(ev, api)
            if gave_up is None:
                return Verdict(False, message=f"{api} neither expired in the purgatory nor was given up by its client")
            got, who = gave_up[0], f"its client gave up first ({gave_up[1]:.0f} ms in), having sent timeout_ms"
        figure = f"{who} {got:.0f} ms (a {want:.0f} ms call)" if expire is None else f"{who} after {got:.0f} ms of a {want:.0f} ms call"
        ok = _within_call(got, want, ev)
        return Verdict(ok, figure, "" if ok else f"{got:.0f} ms is not within the {want:.0f} ms call")

    return Contract(f"{api} expires in the purgatory at the call's time left", check, side="server")


ADMIN_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        id="admin.create-topics-controller-deadline",
        family="Admin",
        title="The controller is slower than the call: CreateTopics answers REQUEST_TIMED_OUT and creates nothing (KRaft)",
        teaching=("The admin call's timeout travels as CreateTopics' timeout_ms, and a KRaft controller makes it the "
                  "deadline of its own work: here the controller needs 60 s, the call gives 30 s, so the answer is "
                  "REQUEST_TIMED_OUT and the topic never exists. librdkafka and kafka-python send the whole operation "
                  "timeout and hear the controller's answer; Java and broker-emu's client send the time left after "
                  "finding the controller, and Java, whose call ends at that same instant, disconnects first. A "
                  "ZooKeeper-era broker created the topic and then timed out (--kafka-version 2.8)."),
        references=("KIP-590", "KIP-500", "KIP-266"),
        steps=(CREATE,),
        topics=(),
        broker_config={"emu.controller.delay.ms": 60_000},
        client_config={"request.timeout.ms": 40_000},
        not_on_kafka="the emulated controller's delay is what makes the deadline pass",
        contracts=(C.outcome_is("create_topics", error="TimeoutException"),
                   C.returns_within("create_topics", "timeout", early_ms=150, late_fraction=0.1),
                   controller_deadline_expired("CreateTopics", "fresh")),
    ),
    Scenario(
        id="admin.delete-records-purgatory",
        family="Admin",
        title="A follower does not copy: DeleteRecords waits in the purgatory and answers REQUEST_TIMED_OUT at timeout_ms",
        teaching=("DeleteRecords moves the leader's low watermark at once but answers only when every replica's has "
                  "moved (DelayedDeleteRecords). A follower that stopped copying holds it until timeout_ms — the call's "
                  "time left — and the partition's answer is REQUEST_TIMED_OUT although the records are gone on the leader."),
        references=("KIP-107", "KIP-266"),
        steps=(Operation("produce", {"topic": "t", "partition": 0, "value": b"x", "count": 3}), DELETE),
        # the followers stop copying as DeleteRecords arrives; they stay in the ISR past the call
        faults=({"replication": {"topic": "t", "mode": "stall"}, "when": "DeleteRecords"},),
        broker_config={"replica.lag.time.max.ms": 120_000},
        client_config={"request.timeout.ms": 40_000, "acks": "all"},
        not_on_kafka="stalling a follower needs the emulator's replication control",
        # a client's own unscaled operation timeout must fit in the scaled call: kafkajs's DeleteRecords always
        # carries timeout_ms 5000 (protocol/requests/deleteRecords/v0/request.js), within a 30 s call at full length,
        # 5 times a 1 s call at scale 30 (the purgatory contract would judge the scale, not the client)
        max_scale=5.0,
        contracts=(C.outcome_is("delete_records", error="TimeoutException"),
                   C.returns_within("delete_records", "timeout", early_ms=150, late_fraction=0.1),
                   purgatory_expired("DeleteRecords")),
    ),
)
