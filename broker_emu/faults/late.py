"""Late requests: the ``hold`` fault's bookkeeping, free of I/O.

A held request was read by the broker but is not handled yet: the client sees no answer, times
out (request.timeout.ms), and usually closes the connection and retries elsewhere. The request
is released into the broker's pipeline when a condition of the same producer happens (its next
InitProducerId, AddPartitionsToTxn, EndTxn, or the first Produce of its next transaction, each
counted once the broker has answered it without error), or after a fallback delay. That is what
"late" means on Kafka: a request the broker has read is handled even when its client has gone
(``SocketServer.Processor.processNewResponses`` drops the answer to a connection that is no
longer open; ``KafkaApis`` has already acted on the request), so a request delayed on the way
lands whenever it reaches the broker, whatever the producer did meanwhile.

The producer is known by its transactional id, read from the request body; a request without
one is released by the fallback delay only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from client.protocol import ApiKey

INIT_PRODUCER_ID, ADD_PARTITIONS, END_TXN, PRODUCE = (int(ApiKey.INIT_PRODUCER_ID), int(ApiKey.ADD_PARTITIONS_TO_TXN),
                                                       int(ApiKey.END_TXN), int(ApiKey.PRODUCE))
# condition -> what releases the held request (the same producer's, answered without error)
HOLD_UNTIL: dict[str, str] = {
    "next_init_producer_id": "its producer's next InitProducerId",
    "next_add_partitions": "its producer's next AddPartitionsToTxn",
    "next_end_txn": "its producer's next EndTxn",
    "next_txn_produce": "the first Produce of its producer's next transaction (after an EndTxn)",
    # a producer of transaction version 1 begins its next transaction with AddPartitionsToTxn, one of
    # version 2 with the Produce that adds the partition: whichever comes first
    "next_txn_start": "its producer's next transaction: an AddPartitionsToTxn, or the first Produce after an EndTxn",
    "delay": "the fallback delay only (ms)",
}
_TRIGGER = {"next_init_producer_id": INIT_PRODUCER_ID, "next_add_partitions": ADD_PARTITIONS,
            "next_end_txn": END_TXN, "next_txn_produce": PRODUCE}
# the APIs whose body names the producer's transactional id at its top level (AddPartitionsToTxn
# v4+ batches several, broker to broker: not a client's request)
_TXN_ID_APIS = frozenset({INIT_PRODUCER_ID, ADD_PARTITIONS, END_TXN, PRODUCE, int(ApiKey.ADD_OFFSETS_TO_TXN),
                          int(ApiKey.TXN_OFFSET_COMMIT)})
_AFTER_END_TXN = frozenset({"next_txn_produce", "next_txn_start"})
WATCHED = frozenset(_TRIGGER.values())


def _fires(req: "HeldRequest", api_key: int) -> bool:
    if req.until == "next_txn_start":
        return api_key == ADD_PARTITIONS or (api_key == PRODUCE and req.saw_end_txn)
    return _TRIGGER.get(req.until) == api_key and (req.until != "next_txn_produce" or req.saw_end_txn)
# Each held request keeps its frame and, once its client has gone, a task: a bound keeps a rule
# that holds every request with a condition that never comes from growing without end.
MAX_HELD = 10_000


def transactional_id(api_key: int, body: Any) -> str | None:
    """The transactional id a request names, if any (None for a body the codec could not read)."""
    if api_key not in _TXN_ID_APIS or not isinstance(body, Mapping):
        return None
    tid = body.get("v3_and_below_transactional_id" if api_key == ADD_PARTITIONS else "transactional_id")
    return tid if isinstance(tid, str) and tid else None


@dataclass
class HeldRequest:
    id: int
    rule: int
    api_key: int
    transactional_id: str | None
    until: str
    held_ms: float
    deadline_ms: float | None                # the fallback: released then if nothing else did
    on_release: Callable[[], None] = lambda: None
    reason: str = ""                         # why it was released (set on release)
    saw_end_txn: bool = False                # next_txn_produce/_start: an EndTxn of the producer was answered since

    def to_dict(self) -> dict[str, Any]:
        return {"held": self.id, "rule": self.rule, "api": ApiKey(self.api_key).api_name,
                "transactional_id": self.transactional_id, "until": self.until, "held_ms": self.held_ms,
                **({"fallback_at_ms": self.deadline_ms} if self.deadline_ms is not None else {})}


@dataclass
class LateRequests:
    """The requests held now, and what releases them."""

    held: dict[int, HeldRequest] = field(default_factory=dict)
    _next: int = 1

    @property
    def full(self) -> bool:
        return len(self.held) >= MAX_HELD

    def hold(self, rule: int, api_key: int, tid: str | None, until: str, now_ms: float, fallback_ms: float) -> HeldRequest:
        if until not in HOLD_UNTIL:
            raise ValueError(f"unknown hold condition {until!r}")
        deadline = now_ms + fallback_ms if fallback_ms else None
        req = HeldRequest(self._next, rule, api_key, tid, until, now_ms, deadline)
        self._next += 1
        self.held[req.id] = req
        return req

    def release(self, req: HeldRequest, reason: str) -> bool:
        """Release ``req`` now; False if it was released already."""
        if self.held.pop(req.id, None) is None:
            return False
        req.reason = reason
        req.on_release()
        return True

    def observe(self, api_key: int, tid: str | None, ok: bool, now_ms: float) -> list[HeldRequest]:
        """A request the broker answered (``ok``: without error): release the held requests whose
        condition it is, and return them."""
        if api_key not in WATCHED or tid is None or not ok:
            return []
        released = []
        for req in list(self.held.values()):
            if req.transactional_id != tid:
                continue
            if req.until in _AFTER_END_TXN and api_key == END_TXN:
                req.saw_end_txn = True
                continue
            if not _fires(req, api_key):
                continue
            waited = now_ms - req.held_ms
            what = (f"its producer's next transaction began with {ApiKey(api_key).api_name}" if req.until == "next_txn_start"
                    else HOLD_UNTIL[req.until])
            if self.release(req, f"after {what}, {waited:.0f} ms after it was held"):
                released.append(req)
        return released
