"""The adapter interface: how the conformance runner drives a client.

An adapter turns scenario operations into calls on one client and reports ``Outcome``s. To add
your own client, subclass ``Adapter``, list the operations it can perform, and implement
``run``. An operation a client does not have makes the scenario N/A for it, never a failure.

Operations (``Operation.kind``) and their ``args``:

    produce          topic, value (bytes), key, partition, count -> outcome per send (delivery report)
    poll             topic, partition, offset ("earliest"/"latest"/int) -> records polled before timeout
    committed        group, topic, partition
    position         topic, partition
    end_offsets      topic, partitions
    beginning_offsets topic, partitions
    offsets_for_times topic, partition, timestamp_ms
    list_topics      -
    partitions_for   topic
    commit_sync      group, topic, partition, offset
    close            -
    admin_list_topics repeat (calls of one client, default 1), pause_s (unscaled, between calls)
                     -> every topic's name, through the client's admin API (its all-topics Metadata)

``Operation.timeout_s`` is the API deadline (None: the client's default).

Declare the client's capabilities too (``capabilities``, conformance/client_capabilities.py): what it has and
lacks, each lack with the client's docs or source. docs/clients.md is made from the declarations,
and tests/conformance/capabilities/test_capabilities.py checks that the adapter's N/As are exactly what they predict.
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping

from conformance.client_capabilities import declared_lack
from conformance.model import Operation, Outcome, Scenario

if TYPE_CHECKING:
    from conformance.client_capabilities import ClientCapabilities

# consumer calls a scenario may ask to warm up (``warm_up: true``; a produce step's ``warm_up``,
# on by default, is the producer's metadata, and every adapter has it)
CONSUMER_CALLS = frozenset({"committed", "position", "end_offsets", "beginning_offsets", "offsets_for_times",
                            "list_topics", "partitions_for", "commit_sync"})
ALL_OPERATIONS = frozenset({
    "produce", "poll", "committed", "position", "end_offsets", "beginning_offsets",
    "offsets_for_times", "list_topics", "partitions_for", "commit_sync", "close", "admin_list_topics",
})


@dataclass
class RunEnv:
    """What an adapter gets for one run."""

    bootstrap: str                    # "127.0.0.1:p1,127.0.0.1:p2,..."
    client_id: str
    config: dict[str, Any]            # Kafka dotted names, already scaled for real-time clients
    scale: float = 1.0
    cluster: Any = None               # in-process cluster (our client uses its in-memory connect)
    clock: Callable[[], float] = time.perf_counter   # seconds; real-time adapters time calls with it
    extras: dict[str, Any] = field(default_factory=dict)


class Adapter(abc.ABC):
    name: str = "adapter"
    virtual_time: bool = False        # True: runs under trio's MockClock over in-memory streams
    operations: frozenset[str] = frozenset()
    sasl: bool = False                # passes security.protocol and sasl.* from the scenario to its client
    # client settings it has no counterpart for -> why; a contract about one (Contract.setting) is N/A
    lacks: Mapping[str, str] = MappingProxyType({})
    # consumer calls for which it honours ``warm_up: true`` (the same call made once, untimed, on the
    # same consumer first: connections up, coordinator known); other such steps are N/A for it
    warm_up_calls: frozenset[str] = frozenset()
    # its client's capabilities, each had or lacked with why (conformance/client_capabilities.py): docs/clients.md
    # is made from them, and an N/A of this adapter must be one of them, or one of their exceptions
    capabilities: ClientCapabilities | None = None

    def available(self) -> tuple[bool, str]:
        """Whether the client is installed here, and if not, why."""
        return True, ""

    def shutdown(self) -> None:
        """Release what the adapter keeps between scenarios (a client program it started)."""
        return None

    def client_version(self) -> str | None:
        """The version of the client library it drives, when known without starting anything
        (campaign rows and reports name it)."""
        return None

    def supports_scenario(self, scenario: Scenario) -> tuple[bool, str]:
        """Whether the client can express ``scenario`` (what the runner asks). By default its
        steps decide; a client that lacks the setting a scenario's contract is about (not an
        operation) says so here."""
        lacked = declared_lack(self, scenario)
        return (False, lacked) if lacked else self.supports(scenario.steps)

    def supports(self, steps: tuple[Operation, ...]) -> tuple[bool, str]:
        missing = sorted({s.kind for s in steps} - self.operations)
        if missing:
            return False, f"{self.name} has no {', '.join(missing)}"
        cold = sorted({s.kind for s in steps if s.kind in CONSUMER_CALLS and s.args.get("warm_up")} - self.warm_up_calls)
        if cold:
            return False, f"the {self.name} adapter cannot warm up its consumer before {', '.join(cold)}"
        return True, ""

    @abc.abstractmethod
    async def run(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        """Perform the steps in order and report one Outcome each (a failed step is an
        Outcome with ok=False, not an exception)."""


class RealTimeAdapter(Adapter):
    """A third-party client driven from ordinary blocking code, in real time."""

    virtual_time = False

    @abc.abstractmethod
    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        ...

    async def run(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        import trio

        return await trio.to_thread.run_sync(self.run_blocking, steps, env)


MS_KEYS_SUFFIX = ".ms"   # a config whose name ends so is a duration, scaled with the run


def scaled_ms(value: Any, scale: float) -> Any:
    return max(1, int(round(value / scale))) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def list_rounds(step: Operation, env: RunEnv, call: Callable[[], Any], error_type: Callable[[BaseException], str],
                sleep: Callable[[float], Any] = time.sleep) -> Outcome:
    """``admin_list_topics`` for a blocking client: ``repeat`` calls on one client, ``pause_s``
    (scaled here) apart. The outcome is the last call's time and topic names, or the first call
    that failed, saying which."""
    rounds = int(step.args.get("repeat", 1))
    start, topics = env.clock(), []
    for i in range(rounds):
        if i:
            sleep(step.args.get("pause_s", 0.0) / env.scale)
        start = env.clock()
        try:
            topics = sorted(call())
        except Exception as exc:  # the client's own error: an outcome, not a crash
            return Outcome("admin_list_topics", False, env.clock() - start, error_type(exc),
                           f"call {i + 1} of {rounds}: {exc}")
    return Outcome("admin_list_topics", True, env.clock() - start, value=topics)
