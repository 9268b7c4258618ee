"""What a conformance run is made of: scenarios, operations, outcomes and verdicts."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable

from broker_emu.trace import TraceEvent

# join_group_held's first member: its heartbeats are black-holed by the scenario's rule, and its
# requests are not the client's under test (Evidence keeps only env.client_id's)
SILENT_MEMBER = "conformance-silent-member"


class Status(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    NA = "n/a"
    ERROR = "error"  # the run itself broke (adapter crash, set-up failure): never a silent pass


@dataclass(frozen=True)
class Operation:
    """One client step. ``kind`` is an operation name adapters know (``produce``, ``poll``,
    ``committed``, ``close``...); ``timeout_s`` is the API deadline when the call takes one
    (None: the client's default, e.g. default.api.timeout.ms)."""

    kind: str
    args: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None


@dataclass
class Outcome:
    """What the client reported for one operation."""

    operation: str
    ok: bool
    elapsed_s: float
    error_type: str | None = None      # Kafka's exception name where the client has one
    error_message: str | None = None
    value: Any = None                  # e.g. records polled, offsets, delivery reports


@dataclass
class Evidence:
    """Everything contracts may look at: both sides of the wire."""

    outcomes: list[Outcome]
    trace: list[TraceEvent]
    config: dict[str, Any]             # the client config actually used (scaled for real time)
    scale: float = 1.0                 # real-time runs divide timeouts by this factor
    cluster: Any = None                # a snapshot for log checks (records per partition...)
    client_id: str | None = None
    slack_ms: float = 0.0              # absolute timing tolerance (real-time runs: scheduling noise)
    steps: tuple[Operation, ...] = ()  # the steps as run (deadlines already scaled)

    def events(self, kind: str | None = None, api: str | None = None) -> list[TraceEvent]:
        return [e for e in self.trace
                if (kind is None or e.kind == kind) and (api is None or (e.api or "").lower() == api.lower())
                and (self.client_id is None or e.client_id in (None, self.client_id))]


@dataclass(frozen=True)
class Timing:
    """A timing figure as numbers: what was measured against what the contract expected (ms,
    on the run's own clock: scaled for real-time runs)."""

    got_ms: float
    want_ms: float

    def to_dict(self) -> dict[str, float]:
        return {"got_ms": round(self.got_ms, 3), "want_ms": round(self.want_ms, 3)}


@dataclass
class Verdict:
    passed: bool
    figure: str = ""      # the key number in words, e.g. "disconnect at 1.02 s of 1.00 s"
    message: str = ""     # why it failed, with evidence
    timing: Timing | None = None   # the same figure as numbers, when it is a timing


@dataclass(frozen=True)
class Contract:
    """A named check over the evidence. ``setting`` is the client setting it holds the client
    to, if any (``"delivery.timeout.ms"``): for a client that has no such setting
    (``Adapter.lacks``) the contract is N/A with the adapter's reason, never a failure, and the
    scenario's other contracts are judged as usual."""

    name: str
    check: Callable[[Evidence], Verdict]
    side: str = "client"   # "client" (outcome) or "server" (trace)
    setting: str | None = None
    # reads events only the emulator records inside its broker (share partitions' locks): through the
    # proxy, in front of a real Kafka or not, there are none, so it is N/A there (conformance/on_kafka.py)
    broker_internal: bool = False


@dataclass(frozen=True)
class Scenario:
    id: str
    family: str
    title: str
    teaching: str
    references: tuple[str, ...]
    steps: tuple[Operation, ...]
    contracts: tuple[Contract, ...]
    brokers: int = 3
    topics: tuple[tuple[str, int, int], ...] = (("t", 1, 3),)
    broker_config: dict[str, Any] = field(default_factory=dict)
    client_config: dict[str, Any] = field(default_factory=dict)
    faults: tuple[dict[str, Any], ...] = ()
    needs_faults: bool = True   # False: can run against any bootstrap (a real Kafka)
    not_on_kafka: str = ""      # why it cannot be judged through the proxy in front of Apache Kafka, if so
    bootstrap_brokers: tuple[int, ...] = ()   # the client's bootstrap.servers: these brokers only (all if empty)
    # the client's bootstrap.servers is an address of its own leading to broker 0 (a DNS name, a load balancer:
    # broker_emu/front_door.py), which a set-up step may move; its connections are traced ``via: bootstrap``
    front_door: bool = False
    # real-time runs divide its times by at most this: timings that need room above the run's
    # slack and the clients' own unscaled backoffs (None: the run's scale)
    max_scale: float | None = None
    # capabilities it is about beyond what its steps need (conformance/client_capabilities.py: NAMES), such as the
    # setting its timing is held to; a client lacking one is N/A for it, or judged on what stands in
    needs: tuple[str, ...] = ()

    def scale_in(self, run_scale: float) -> float:
        """The factor a real-time run divides this scenario's times by."""
        return min(run_scale, self.max_scale) if self.max_scale else run_scale


@dataclass
class Result:
    scenario: str
    client: str
    status: Status
    figures: dict[str, str] = field(default_factory=dict)
    message: str = ""
    contracts: list[tuple[str, Status, str]] = field(default_factory=list)
    simulated_s: float = 0.0
    wall_s: float = 0.0
    trace: list[TraceEvent] = field(default_factory=list)
    evidence: Evidence | None = None   # what was judged (campaigns derive their figures from it)
    timings: dict[str, Timing] = field(default_factory=dict)   # contract name -> its timing figure

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario, "client": self.client, "status": self.status.value,
            "figures": self.figures, "timings": {k: t.to_dict() for k, t in self.timings.items()},
            "message": self.message,
            "contracts": [{"name": n, "status": s.value, "detail": d} for n, s, d in self.contracts],
            "simulated_s": round(self.simulated_s, 3), "wall_s": round(self.wall_s, 3),
        }
