"""The timeout playground's provider: a few teaching scenarios, the settings a student may change
in each (two to four, with Kafka's names and honest bounds), and a run of the scenario with them
by our client in virtual time, drawn as ``broker-emu explain`` draws it.

The HTTP side (routes, body shape, one run at a time, the wall-time limit) is the emulator's
(``broker_emu.control.playground``), which may not import this suite; ``conformance.main`` passes
``ScenarioPlayground`` to ``broker-emu serve``, the layer above both. Settings are the flat keys
of ``conformance.params`` (client config by Kafka's name, ``broker.<key>``, ``fault.ms``,
``fault.times``, ``timeout.ms``), applied with ``apply_params`` as campaigns and
``explain --compare`` apply them.

Which clock wins is the point of most of these scenarios, and the list says where a setting
cannot move it: our producer (as Java's) puts request.timeout.ms in the Produce's timeout_ms, so
in the purgatory race both clocks come from one setting and the broker's starts later, after
the append; the client gives up first whatever the value. DeleteRecords has two settings for
its two clocks (the call's timeout travels as timeout_ms; request.timeout.ms bounds each
attempt), so there the winner moves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from broker_emu.config import DEFAULTS as BROKER_DEFAULTS
from broker_emu.config import ConfigError
from broker_emu.control.playground import PlaygroundInputError
from client.config import COMMON, CONSUMER, PRODUCER
from client.config import ConfigException as ClientConfigException
from conformance.explain import Span, explain, render_svg
from conformance.model import Scenario
from conformance.params import apply_params
from conformance.scenarios import BY_ID

CLIENT_DEFAULTS = {**COMMON, **PRODUCER, **CONSUMER}


@dataclass(frozen=True)
class Setting:
    key: str          # a conformance.params key
    label: str
    minimum: int
    maximum: int


RT = Setting("request.timeout.ms", "request.timeout.ms: the client's clock for each request", 100, 300_000)
DT = Setting("delivery.timeout.ms", "delivery.timeout.ms: the record's whole life in the producer "
             "(at least linger.ms + request.timeout.ms)", 1_000, 600_000)
LAG = Setting("broker.replica.lag.time.max.ms", "replica.lag.time.max.ms (broker): how long a follower that "
              "stopped copying stays in the ISR", 1_000, 1_000_000)

PLAYGROUND: dict[str, tuple[tuple[Setting, ...], str]] = {
    "server.purgatory-request-timed-out": (
        (Setting("request.timeout.ms", "request.timeout.ms: the client's clock, and also the Produce's timeout_ms "
                 "(the broker's purgatory clock)", 100, 300_000),
         Setting("fault.ms", "time between the client sending the Produce and the broker's append (network, "
                 "queueing): the broker's clock starts after it", 0, 120_000), LAG, DT),
        "For our producer, as for Java's, request.timeout.ms is both clocks, so a longer one does not hand the race "
        "to the broker: its clock starts later, after the append, and the client gives up first. Only with no time "
        "at all before the append (0 ms, which no network gives) do both end at the same instant: the broker's "
        "answer arrives at the client's very deadline, and ties go to the answer (as in Java, a request expires only "
        "once its timeout is exceeded). Lower replica.lag.time.max.ms and the stalled followers leave the ISR: "
        "nobody times out. admin.delete-records-purgatory has two settings for its two clocks."),
    "admin.delete-records-purgatory": (
        (Setting("timeout.ms", "deleteRecords(timeout): the call's deadline; its time left travels as "
                 "DeleteRecords' timeout_ms (the broker's clock)", 1_000, 300_000), RT, LAG),
        "Two clocks, two settings: the broker expires the parked DeleteRecords at the call's time left, the client "
        "gives up an attempt at request.timeout.ms. Set request.timeout.ms below the call's timeout and the client "
        "gives up first."),
    "kip19.produce-black-hole": (
        (RT, DT, Setting("fault.times", "how many Produce requests the leader swallows", 1, 20)),
        "Only the client has a clock here: nothing on the broker side times out a request it never answers."),
    "kip19.slow-broker-no-reconnect": (
        (Setting("fault.ms", "how long the broker holds its Produce answer", 0, 120_000), RT),
        "A slow answer within request.timeout.ms is waited for; hold it longer than request.timeout.ms and the "
        "client disconnects and retries."),
    "kip91.delivery-timeout-in-flight": (
        (RT, DT),
        "delivery.timeout.ms bounds the record's life however many request timeouts happen inside it."),
    "kip266.committed-coordinator-black-hole": (
        (Setting("timeout.ms", "committed(timeout): the call's own deadline", 0, 300_000), RT),
        "The call's deadline bounds it; each request inside it is bounded by request.timeout.ms too. Make the "
        "deadline longer than request.timeout.ms and a request timeout fires first."),
    "kip266.retries-shrink-to-time-left": (
        (Setting("timeout.ms", "committed(timeout): the call's own deadline", 0, 300_000), RT),
        "Each attempt gets min(time left, request.timeout.ms) (the min rule of Kafka's new consumer design): the "
        "call ends at its own deadline, never later, whatever request.timeout.ms is."),
    "kip266.poll-empty-at-deadline": (
        (Setting("timeout.ms", "poll(timeout): the call's own deadline", 0, 60_000),
         Setting("fetch.max.wait.ms", "fetch.max.wait.ms: how long the broker holds each Fetch (a long poll; the "
                 "client requires request.timeout.ms above it)", 0, 29_000)),
        "A long poll is not a timeout, and poll never raises one: it returns what it has at its deadline."),
    "txn.coordinator-aborts-at-check-interval": (
        (Setting("transaction.timeout.ms", "transaction.timeout.ms: sent to the coordinator, enforced by it",
                 1_000, 900_000),
         Setting("broker.transaction.abort.timed.out.transaction.cleanup.interval.ms",
                 "the coordinator's check interval (broker)", 100, 60_000)),
        "The producer keeps its transaction open 12 s, then commits. The coordinator aborts it at its first check "
        "after transaction.timeout.ms, if that comes before the commit."),
    "kip848.crashed-member-expires-at-broker-session": (
        (Setting("broker.group.consumer.session.timeout.ms", "group.consumer.session.timeout.ms (broker; Kafka "
                 "bounds it by group.consumer.min/max.session.timeout.ms)", 45_000, 60_000),
         Setting("broker.group.consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms (broker): "
                 "the pace it tells its members", 5_000, 15_000)),
        "The broker owns the session timer under KIP-848; the surviving member's partitions arrive on its first "
        "heartbeat after the crashed member is fenced."),
}


def default(scenario: Scenario, key: str) -> int:
    """The value ``key`` has in ``scenario`` as written (Kafka's default where it says nothing)."""
    value: Any
    if key.startswith("broker."):
        value = scenario.broker_config.get(key[len("broker."):], BROKER_DEFAULTS.get(key[len("broker."):]))
    elif key == "fault.ms":
        value = next(f["action"]["ms"] for f in scenario.faults if isinstance(f.get("action"), dict) and "ms" in f["action"])
    elif key == "fault.times":
        value = next(f["times"] for f in scenario.faults if "times" in f)
    elif key == "timeout.ms":
        value = next(s.timeout_s * 1000 for s in scenario.steps if s.timeout_s is not None)
    else:
        value = scenario.client_config.get(key, CLIENT_DEFAULTS.get(key))
    return int(value)


def winner(spans: list[Span]) -> str:
    """Whose clock ran out first, as the timeline's "who gave up first" lane says."""
    first = min((s for s in spans if s.kind in ("timeout-client", "timeout-server")), key=lambda s: s.end, default=None)
    return "nobody" if first is None else "client" if first.kind == "timeout-client" else "broker"


class ScenarioPlayground:
    """The ``PlaygroundProvider`` of ``broker_emu.control.playground``."""

    def catalogue(self) -> list[dict[str, Any]]:
        out = []
        for sid, (settings, note) in PLAYGROUND.items():
            s = BY_ID[sid]
            out.append({"id": sid, "family": s.family, "title": s.title, "teaching": s.teaching, "note": note,
                        "settings": [{"key": x.key, "label": x.label, "default": default(s, x.key),
                                      "minimum": x.minimum, "maximum": x.maximum, "unit": "" if x.key == "fault.times" else "ms"}
                                     for x in settings]})
        return out

    def check(self, scenario: str, settings: dict[str, float]) -> tuple[Scenario, dict[str, int]]:
        if scenario not in PLAYGROUND:
            raise PlaygroundInputError(f"no playground scenario {scenario[:200]!r} (known: {', '.join(PLAYGROUND)})",
                                       "scenario")
        allowed = {x.key: x for x in PLAYGROUND[scenario][0]}
        values: dict[str, int] = {}
        for key, value in settings.items():
            field = f"settings.{key[:200]}"
            if key not in allowed:
                raise PlaygroundInputError(f"{scenario} has no setting {key[:200]!r} (known: {', '.join(allowed)})", field)
            x = allowed[key]
            if value != int(value):
                raise PlaygroundInputError(f"{key} must be a whole number, got {value}", field)
            if not x.minimum <= value <= x.maximum:
                raise PlaygroundInputError(f"{key} must be within {x.minimum}..{x.maximum}, got {str(value)[:40]}", field)
            values[key] = int(value)
        return BY_ID[scenario], values

    def run(self, checked: tuple[Scenario, dict[str, int]]) -> dict[str, Any]:
        base, values = checked
        wall = time.perf_counter()
        effective = {x.key: values.get(x.key, default(base, x.key)) for x in PLAYGROUND[base.id][0]}
        changed = {k: v for k, v in values.items() if v != default(base, k)}
        try:
            result, spans, marks = explain(apply_params(base, changed))
        except Exception as exc:
            refused = refusal(exc)
            if refused is None:
                raise
            raise PlaygroundInputError(refused, "settings") from None
        said = next((m.label for m in marks if m.lane == "who gave up first"),
                    "nobody gave up: no client clock and no broker timer ran out")
        title = base.id + (" with " + ", ".join(f"{k} = {v}" for k, v in changed.items()) if changed else " (as written)")
        svg = render_svg(title, spans, marks)
        return {"scenario": base.id, "title": base.title, "settings": effective, "changed": changed,
                "winner": winner(spans), "first_to_give_up": said, "svg": svg, "status": result.status.value,
                "contracts": [{"name": n, "status": s.value, "detail": d} for n, s, d in result.contracts],
                "outcomes": [{"operation": o.operation, "ok": o.ok, "error_type": o.error_type,
                              "error_message": o.error_message, "elapsed_ms": round(o.elapsed_s * 1000, 1)}
                             for o in (result.evidence.outcomes if result.evidence else [])],
                "simulated_ms": round(result.simulated_s * 1000, 1),
                "wall_ms": round((time.perf_counter() - wall) * 1000, 1)}


def refusal(exc: BaseException) -> str | None:
    """What refused the settings, when ``exc`` is a configuration check (the client's, as Java's
    ProducerConfig refuses delivery.timeout.ms below linger.ms + request.timeout.ms, or the
    broker's), possibly inside trio's exception group; None for anything else (a bug)."""
    if isinstance(exc, ClientConfigException):
        return f"the client refuses these settings: {exc}"
    if isinstance(exc, ConfigError):
        return f"the broker refuses these settings: {exc}"
    if isinstance(exc, BaseExceptionGroup):
        return next((r for r in map(refusal, exc.exceptions) if r), None)
    return None
