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


def controller_deadline_expired(api: str, topic: str) -> Contract:
    """The controller's deadline passed before it got to the request: a controller_deadline event
    for ``api`` whose timeout_ms is the call's time left, and ``topic`` was never created."""

    def check(ev: Evidence) -> Verdict:
        hit = next((e for e in ev.events(Kind.CONTROLLER_DEADLINE) if (e.details or {}).get("api") == api), None)
        if hit is None:
            return Verdict(False, message=f"no {api} reached its controller deadline")
        sent = hit.details["timeout_ms"]
        want = C.expected_ms(ev, "timeout", "create_topics")
        created = any(k.startswith(f"{topic}-") for k in (ev.cluster or {}).get("log_end_offsets", {}))
        figure = f"timeout_ms {sent} of a {want:.0f} ms call" + ("; the topic exists" if created else "; nothing created")
        if created:
            return Verdict(False, figure, f"{topic} was created although the deadline passed")
        if not 0.8 * want - ev.slack_ms <= sent <= want + ev.slack_ms:
            return Verdict(False, figure, f"the request carried timeout_ms {sent}, not the call's time left ({want:.0f} ms)")
        return Verdict(True, figure)

    return Contract("the controller's deadline is the call's time left; nothing is created", check, side="server")


def purgatory_expired(api: str) -> Contract:
    """The request waited in the purgatory and expired there at its timeout_ms."""

    def check(ev: Evidence) -> Verdict:
        enter = next((e for e in ev.events(Kind.PURGATORY_ENTER, api)), None)
        expire = next((e for e in ev.events(Kind.PURGATORY_EXPIRE, api)), None)
        if enter is None or expire is None:
            return Verdict(False, message=f"no {api} {'entered' if enter is None else 'expired in'} the purgatory")
        stayed = expire.t_ms - enter.t_ms
        want = C.expected_ms(ev, "timeout", "delete_records")
        figure = f"parked {stayed:.0f} ms of a {want:.0f} ms call"
        ok = 0.8 * want - ev.slack_ms <= stayed <= want + ev.slack_ms
        return Verdict(ok, figure, "" if ok else f"the purgatory held {api} {stayed:.0f} ms, expected about {want:.0f} ms")

    return Contract(f"{api} expires in the purgatory at the call's time left", check, side="server")


ADMIN_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        id="admin.create-topics-controller-deadline",
        family="Admin",
        title="The controller is slower than the call: CreateTopics answers REQUEST_TIMED_OUT and creates nothing (KRaft)",
        teaching=("The admin call's timeout travels as CreateTopics' timeout_ms, and a KRaft controller makes it the "
                  "deadline of its own work: here the controller needs 60 s, the call gives 30 s, so at 30 s the answer is "
                  "REQUEST_TIMED_OUT and the topic never exists. A ZooKeeper-era broker created it and then timed out "
                  "(--kafka-version 2.8)."),
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
        contracts=(C.outcome_is("delete_records", error="TimeoutException"),
                   C.returns_within("delete_records", "timeout", early_ms=150, late_fraction=0.1),
                   purgatory_expired("DeleteRecords")),
    ),
)
