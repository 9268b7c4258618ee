"""What the fault rules do to a connection and to each request on it: the one sequence the
emulated broker and the proxy both run (``server.Connection`` calls it; the proxy's connections
are ``server.Connection`` too, with the upstream as their backend).

On connect: refuse, never read, delay the accept, delay the close. Around a request, in this
order: decide (each rule that applies traced as ``fault_applied``), then before the request is
answered (stop the broker, hold the request, swallow it, close or reset instead of answering),
then the answer itself (an injected error instead of the backend's, a close after it), and
last the way it is sent (held, half written, followed by the throttle's mute, KIP-219).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Protocol

import trio

from broker_emu import socket_io, syn_gate
from broker_emu.connection_close import CloseConnection
from broker_emu.faults import late
from broker_emu.faults.engine import Decision, FaultEngine, RequestFacts
from broker_emu.faults.rules import Rule
from broker_emu.trace import Kind, Trace
from client.protocol import ApiKey


class FaultHost(Protocol):
    """What this module needs of what serves the connection: the cluster, or the proxy."""

    @property
    def faults(self) -> FaultEngine: ...
    @property
    def trace(self) -> Trace: ...

    def now_ms(self) -> float: ...
    async def stop_broker(self, broker_id: int) -> None: ...
    def stop_broker_later(self, broker_id: int, delay_s: float = 0.0) -> None: ...
    def run_late(self, fn: Callable[[], Awaitable[None]]) -> None: ...


class FaultedConnection(Protocol):
    """What this module needs of a connection (``server.Connection``'s public face)."""

    @property
    def cluster(self) -> FaultHost: ...
    broker: Any
    id: int
    addr: str
    client_id: str | None
    stream: trio.abc.Stream
    peer_closed: bool
    close_delay_s: float
    muted_until_ms: float

    def trace(self, kind: str, **fields: Any) -> None: ...
    def abort(self, reason: str) -> None: ...
    def closed_by(self, who: str, reason: str) -> None: ...
    async def send(self, out: bytes, correlation_id: int, api_key: int, version: int, errors: Any,
                   fields: dict[str, Any] | None = None) -> bool: ...


async def on_connect(conn: FaultedConnection) -> bool:
    """The connection rules, as the connection opens; False: it was refused (and is closed)."""
    # drop_connects was decided before connecting: in memory by Cluster.open_connection, on a
    # broker's TCP listener by its SYN gate (broker_emu/dropped_connects.py) where the kernel
    # drops SYNs (Linux); the front door's TCP listener, and any elsewhere, have it act as
    # accept_never_read
    via_bootstrap = getattr(conn, "via_bootstrap", False)
    decided = conn.addr.startswith("memory:") or (not via_bootstrap and syn_gate.DROPS_SYNS)
    for rule in conn.cluster.faults.on_connect(conn.broker.id, conn.id, conn.cluster.now_ms(),
                                               skip="drop_connects" if decided else None, bootstrap=via_bootstrap):
        conn.trace(Kind.FAULT_APPLIED, details={"rule": rule.id, "action": rule.action.to_dict()})
        kind = rule.action.type
        if kind == "refuse_connections":
            conn.closed_by("broker", f"fault {rule.id}: refuse_connections")
            return False
        if kind in ("accept_never_read", "drop_connects"):
            await trio.sleep_forever()
        if kind == "slow_accept":
            await trio.sleep(rule.action.ms / 1000)
        conn.close_delay_s = rule.action.ms / 1000 if kind == "slow_close" else conn.close_delay_s
    return True


def _carries_acknowledgements(api_key: int, body: Any) -> bool:
    """A ShareAcknowledge, or a ShareFetch with acknowledgement batches (False for a body the codec
    could not read)."""
    if api_key == ApiKey.SHARE_ACKNOWLEDGE:
        return True
    if api_key != ApiKey.SHARE_FETCH or not isinstance(body, Mapping):
        return False
    return any(p.get("acknowledgement_batches") for t in body.get("topics") or () for p in t.get("partitions") or ())


def decide(conn: FaultedConnection, api_key: int, api_version: int, topics: list[tuple[str, int | None]],
           fields: dict[str, Any], body: Any = None) -> Decision:
    """The fault rules that apply to this request, each traced as ``fault_applied``."""
    cluster = conn.cluster
    if not cluster.faults.rules:
        return Decision()
    facts = RequestFacts(conn.broker.id, api_key, api_version, conn.client_id, conn.id, frozenset(topics),
                         getattr(conn, "via_bootstrap", False),   # the emulator's and the proxy's front doors
                         late.transactional_id(api_key, body), _carries_acknowledgements(api_key, body))
    decision = cluster.faults.decide(facts, cluster.now_ms())
    for rule in decision.applied:
        drawn = {"delay_ms": decision.drawn_ms[rule.id]} if rule.id in decision.drawn_ms else {}   # a jittered delay
        cluster.trace.emit("fault_applied", **fields, details={"rule": rule.id, "action": rule.action.to_dict(), **drawn})
    return decision


async def before(conn: FaultedConnection, decision: Decision, api_key: int, held: LateCall | None = None) -> bool:
    """What a decision does before the request is answered: stop the broker, hold the request,
    swallow it (black_hole) or close instead of answering it. False: the connection is closed.
    ``held``: what a hold rule needs to answer the request after its client has gone."""
    if decision.stop_broker_ms is not None:
        if decision.stop_broker_ms == 0:
            await conn.cluster.stop_broker(conn.broker.id)   # a crash on receipt: this request dies with it
            return False
        # this request goes on (into a long poll, the purgatory...) and the broker stops under it
        conn.cluster.stop_broker_later(conn.broker.id, decision.stop_broker_ms / 1000)
    if decision.delay_request_ms:
        await trio.sleep(decision.delay_request_ms / 1000)
    if decision.hold is not None and held is not None:
        await hold(conn, decision.hold, held)
    terminal = decision.terminal
    if terminal is not None and terminal.type == "black_hole":
        if not terminal.close_ms:
            await trio.sleep_forever()
        await trio.sleep(terminal.close_ms / 1000)   # Toxiproxy's timeout: nothing answered, then the close
        conn.abort(f"fault: black_hole, closed after {terminal.close_ms:g} ms")
        return False
    if terminal is not None and terminal.type in ("close_before", "reset"):
        if terminal.type == "reset":
            socket_io.reset_on_close(conn.stream)
        conn.abort(f"fault: {terminal.type} {api_key}")
        return False
    return True


async def answer(decision: Decision, api_key: int, answer: Callable[[], Awaitable[Any]],
                 error_answer: Callable[[int], Any], without_brokers: Callable[[Any], Any]) -> Any:
    """The answer under a decision: an injected error's instead of the backend's; for
    no_brokers, the backend's with its brokers list emptied (``Backend.without_brokers``, which
    rewrites the emulator's answer and the proxy's upstream's alike); and after it, for
    close_after, the close (``CloseConnection``) instead of sending it."""
    terminal = decision.terminal
    if terminal is not None and terminal.type == "error":
        response = error_answer(terminal.error)
    else:
        response = await answer()
    if terminal is not None and terminal.type == "no_brokers" and response is not None:
        response = without_brokers(response)
    if terminal is not None and terminal.type == "close_after":
        raise CloseConnection(f"fault: close_after {api_key}")
    return response


async def send(conn: FaultedConnection, out: bytes, errors: list[int], decision: Decision, fields: dict[str, Any]) -> bool:
    """Send an answer as the decision says: held (delay_response, a bandwidth rule), half
    written then stalled (partial_response), and followed by the throttle's mute (KIP-219)."""
    if decision.delay_response_ms or decision.bytes_per_s:   # a bandwidth rule holds it for its size
        await trio.sleep(decision.delay_response_ms / 1000 + (len(out) / decision.bytes_per_s if decision.bytes_per_s else 0))
    terminal = decision.terminal
    if terminal is not None and terminal.type == "partial_response":
        await conn.stream.send_all(out[: max(1, len(out) // 2)])
        conn.cluster.trace.emit("send", **fields, details={"partial": True, "bytes": len(out) // 2})
        await trio.sleep_forever()
    if not await conn.send(out, fields["correlation_id"], fields["api_key"], fields["api_version"], errors, fields):
        return False
    if decision.throttle_ms:
        conn.muted_until_ms = conn.cluster.now_ms() + decision.throttle_ms   # (the console shows it)
        await trio.sleep(decision.throttle_ms / 1000)  # KIP-219: the broker mutes the channel
    return True


# -- hold: a late request ----------------------------------------------------------------------------
@dataclass(frozen=True)
class LateCall:
    """A held request as the pipeline hands it over: its trace fields, its body, and how to answer
    it once its client has gone (the backend's ``late_answer``, giving the answer's error codes)."""

    fields: dict[str, Any]
    body: Any
    answer: Callable[[], Awaitable[list[int] | None]]


async def hold(conn: FaultedConnection, rule: Rule, call: LateCall) -> None:
    """Hold the request until its rule's condition (``faults/late.py``) or fallback. While the
    client waits, the connection answers nothing (its requests are answered in order); once
    released the request goes on through the pipeline and is answered on it. If the client
    closes the connection first (its request.timeout.ms), the request stays held and is handled
    when released, its answer dropped: a request the broker has read is still handled
    (``KafkaApis``; ``SocketServer.Processor.processNewResponses`` drops the answer to a gone
    connection). If the broker closes the connection (it stopped, another fault), the held
    request goes with it."""
    host = conn.cluster
    api_key = call.fields["api_key"]
    if host.faults.held_requests.full:   # late.MAX_HELD: this one goes on at once, and the trace says why
        host.trace.emit(Kind.LATE_RELEASE, **call.fields, details={"reason": f"not held: {late.MAX_HELD} requests are "
                                                                                 "held already", "connection_open": True})
        return
    req = host.faults.held_requests.hold(rule.id, api_key, late.transactional_id(api_key, call.body), rule.action.until,
                                host.now_ms(), rule.action.ms)
    released = trio.Event()
    req.on_release = released.set
    host.trace.emit(Kind.LATE_HOLD, **call.fields, details=req.to_dict())
    try:
        await _released(host, req, released)
    except trio.Cancelled:
        if conn.peer_closed and req.id in host.faults.held_requests.held:
            host.run_late(lambda: _answer_late(host, conn.broker, req, released, call))
        elif req.id in host.faults.held_requests.held:
            host.faults.held_requests.release(req, "dropped: the broker closed the connection")
            host.trace.emit(Kind.LATE_RELEASE, **call.fields, details={**req.to_dict(), "reason": req.reason,
                                                                        "connection_open": False, "dropped": True})
        raise
    host.trace.emit(Kind.LATE_RELEASE, **call.fields, details={**req.to_dict(), "reason": req.reason,
                                                                "connection_open": True})


async def _released(host: FaultHost, req: late.HeldRequest, released: trio.Event) -> None:
    """Until the condition releases it, or its fallback delay passes."""
    if req.deadline_ms is None:
        await released.wait()
        return
    with trio.move_on_after(max(0.0, req.deadline_ms - host.now_ms()) / 1000):
        await released.wait()
    host.faults.held_requests.release(req, f"fallback: {req.deadline_ms - req.held_ms:g} ms after it was held")


async def _answer_late(host: FaultHost, broker: Any, req: late.HeldRequest, released: trio.Event, call: LateCall) -> None:
    """The held request of a client that has gone: handled when released, its answer dropped."""
    await _released(host, req, released)
    alive = getattr(broker, "alive", True)
    host.trace.emit(Kind.LATE_RELEASE, **call.fields, details={**req.to_dict(), "reason": req.reason,
                                                                "connection_open": False,
                                                                **({} if alive else {"dropped": True})})
    if not alive:   # the broker that read it has stopped since: the request died with it
        return
    try:
        errors = await call.answer()
    except Exception as exc:   # a bug: traced as one, never a crash of the cluster's own tasks
        host.trace.emit(Kind.HANDLER_ERROR, **call.fields, details={"stage": "late answer",
                                                                     "error": f"{type(exc).__name__}: {exc}"})
        return
    host.trace.emit(Kind.LATE_ANSWER, **call.fields, details={
        "held": req.id, "dropped": True, **({"errors": sorted(set(errors))} if errors else {}),
        **({"no_answer": True} if errors is None else {})})


def observe(conn: FaultedConnection, api_key: int, body: Any, errors: list[int]) -> None:
    """A request answered while requests are held: release those it is the condition of."""
    host = conn.cluster
    host.faults.held_requests.observe(api_key, late.transactional_id(api_key, body), not any(errors), host.now_ms())
