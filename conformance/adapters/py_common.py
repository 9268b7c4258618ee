"""What the Python client adapters (confluent-kafka, kafka-python, aiokafka) share: the value
shapes of ``ours.py`` (the reference) and a watchdog for calls that may never return.

Value shapes (``Outcome.value``), as ``OurAdapter`` reports them:

    committed          {TopicPartition: offset or None}
    position           repr(offset)
    end_offsets,
    beginning_offsets  repr({TopicPartition: offset})
    offsets_for_times  repr({TopicPartition: (offset, timestamp)})   (-1, -1): no such record
    list_topics        repr({topic: [partition ids]})
    partitions_for     repr([partition ids])
    commit_sync        repr(None)
    poll               the number of records polled
    close              None

``TopicPartition`` is our client's (a named tuple, so its repr is kafka-python's and aiokafka's).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from typing import Any, Awaitable, Callable, Iterable

from client.consumer.records import TopicPartition
from conformance.adapters.base import Adapter, RunEnv
from conformance.client_capabilities import needs
from conformance.model import Operation, Outcome

# the unscaled defaults a real-time run divides by its scale when the scenario sets neither
DEFAULT_API_TIMEOUT_MS = 60_000
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
# librdkafka retries a deadline-less ListOffsets three times, socket.timeout.ms (60 s) each: a
# watchdog must wait well past such slow bounds before it calls a call hung
WATCHDOG_FACTOR = 6


class NoReturn(Exception):
    """The call had not returned when the adapter's watchdog gave up on it."""


# what kafka-python 3.0 and aiokafka 0.14 were seen to do where the contract is about a setting they lack
NO_SETUP_TIMEOUT = {
    "kafka-python": "kafka-python has no socket.connection.setup.timeout.ms: measured, it waits in the stalled "
                    "handshake until the record's delivery timeout (docs/findings.md)",
    "aiokafka": "aiokafka has no socket.connection.setup.timeout.ms: its SaslHandshake is an ordinary request under "
                "request_timeout_ms (conn.py: AIOKafkaConnection._do_sasl_handshake -> send -> wait_for), which closes "
                "the stalled connection; AIOKafkaClient._get_conn then returns None and the send's NodeNotReadyError "
                "fails the record, by then request_timeout_ms old (producer/sender.py _can_retry: batch.expired()). "
                "Measured: NodeNotReadyError at 1.0 s of a scaled 1.0 s request_timeout_ms, no second handshake "
                "(docs/findings.md)",
}


# what stands in for the missing setting: nothing. The scenarios about it run, and the contract that
# a stalled handshake is abandoned at the setup timeout judges what these clients do instead (they
# wait on, until a request or delivery timeout ends the record): a finding, not an N/A
def lacks_growing_setup_timeout(adapter: Adapter, scenario: Any) -> tuple[bool, str] | None:
    """N/A where the scenario is about KIP-601's growing setup timeout: these clients have no setup
    timeout at all, so nothing of theirs can grow (the stalled-handshake scenario, about the setup
    timeout alone, runs and judges what they do instead: SETUP_TIMEOUT_JUDGED)."""
    if "socket.connection.setup.timeout.max.ms" in needs(scenario):
        return False, f"lacks socket.connection.setup.timeout.max.ms: {NO_SETUP_TIMEOUT[adapter.name]}"
    return None


SETUP_TIMEOUT_JUDGED = ("what the client does with a stalled connection set-up: the matrix judges it against "
                        "socket.connection.setup.timeout.ms, which nothing of its own enforces")


def python_sasl(config: dict[str, Any]) -> dict[str, Any]:
    """kafka-python's and aiokafka's names for the scenario's security settings."""
    names = {"security.protocol": "security_protocol", "sasl.mechanism": "sasl_mechanism",
             "sasl.username": "sasl_plain_username", "sasl.password": "sasl_plain_password"}
    return {ours: config[kafka] for kafka, ours in names.items() if kafka in config}


def short(value: Any) -> str:
    return repr(value)[:1000]  # room for a 50-partition __consumer_offsets in list_topics


def offsets_value(items: Iterable[tuple[str, int, Any]]) -> dict[TopicPartition, Any]:
    """(topic, partition, value) triples as ours reports them: keyed by TopicPartition."""
    return {TopicPartition(topic, partition): value for topic, partition, value in items}


def topics_value(topics: dict[str, Iterable[int]]) -> dict[str, list[int]]:
    return {name: sorted(parts) for name, parts in sorted(topics.items())}


def watchdog_s(step: Operation, env: RunEnv) -> float:
    """How long an adapter waits for a call before it reports NoReturn: six times the longest
    of the call's deadline, default.api.timeout.ms and request.timeout.ms of the run (a client
    may rightly bound a call by either setting), plus 2 s of real-time slack."""
    api = env.config.get("default.api.timeout.ms", DEFAULT_API_TIMEOUT_MS / env.scale)
    request = env.config.get("request.timeout.ms", DEFAULT_REQUEST_TIMEOUT_MS / env.scale)
    return WATCHDOG_FACTOR * max(step.timeout_s or 0.0, api / 1000, request / 1000) + 2.0


def no_return(step: Operation, limit_s: float, bound_by: str) -> str:
    return (f"{step.kind}: the call had not returned {limit_s:.1f} s after it was made, when the adapter stopped "
            f"waiting ({bound_by})")


def call_in_thread(call: Callable[[], Any], limit_s: float) -> Any:
    """Run a blocking client call on a thread of its own and wait at most ``limit_s`` for it.
    Raises NoReturn if it is still blocked (the thread is left behind: a daemon, with its client)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the caller, whatever it is
            box["error"] = exc

    thread = threading.Thread(target=target, name="conformance-call", daemon=True)
    thread.start()
    thread.join(limit_s)
    if thread.is_alive():
        raise NoReturn()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def timed_blocking(step: Operation, env: RunEnv, call: Callable[[], Any], shape: Callable[[Any], Any],
                   error_type: Callable[[BaseException], str], bound_by: str) -> tuple[Outcome, bool]:
    """One blocking call, timed with the run's clock, under the watchdog. Returns the outcome
    and whether the call came back (False: the client must not be closed, it is still in use)."""
    limit = watchdog_s(step, env)
    start = env.clock()
    try:
        got = call_in_thread(call, limit)
    except NoReturn:
        return Outcome(step.kind, False, env.clock() - start, "NoReturn", no_return(step, limit, bound_by)), False
    except Exception as exc:  # the client's own error: an outcome, not a crash
        return Outcome(step.kind, False, env.clock() - start, error_type(exc), str(exc) or type(exc).__name__), True
    return Outcome(step.kind, True, env.clock() - start, value=shape(got)), True


async def timed_async(step: Operation, env: RunEnv, call: Callable[[], Awaitable[Any]], shape: Callable[[Any], Any],
                      error_type: Callable[[BaseException], str], bound_by: str) -> Outcome:
    """One asyncio call, timed: the step's deadline is asyncio's own (``asyncio.timeout``, the
    way an asyncio application gives a call a deadline); without one the call runs on the
    client's own settings (``bound_by``) under the watchdog."""
    limit = watchdog_s(step, env)
    start = env.clock()
    try:
        if step.timeout_s is not None:
            async with asyncio.timeout(step.timeout_s):
                got = await call()
        else:
            watchdog = asyncio.timeout(limit)
            try:
                async with watchdog:
                    got = await call()
            except TimeoutError:
                if not watchdog.expired():
                    raise   # the client's own timeout, not the watchdog's
                return Outcome(step.kind, False, env.clock() - start, "NoReturn", no_return(step, limit, bound_by))
    except Exception as exc:  # the client's own error (or asyncio's TimeoutError at the deadline)
        return Outcome(step.kind, False, env.clock() - start, error_type(exc), str(exc) or type(exc).__name__)
    return Outcome(step.kind, True, env.clock() - start, value=shape(got))


def warm_step(step: Operation, env: RunEnv) -> Operation:
    """The call a ``warm_up`` step makes first, untimed, on the same consumer: the step's call
    with the client's default.api.timeout.ms (already scaled) as its deadline."""
    return replace(step, timeout_s=env.config.get("default.api.timeout.ms", 60_000 / env.scale) / 1000)


def warm_up_failed(outcome: Outcome) -> Outcome:
    """A step whose warm-up call failed: that failure, said so, and no time for the step itself."""
    return replace(outcome, elapsed_s=0.0, error_message=f"the warm-up call failed: {outcome.error_message}")


def not_created(step: Operation, elapsed_s: float, exc: BaseException, what: str) -> Outcome:
    """The client could not even be created (or started) in this scenario, so the step's call
    was never made: reported under a name of its own, so no contract mistakes it for the call's."""
    return Outcome(step.kind, False, elapsed_s, "ConsumerNotCreated",
                   f"{what} failed before {step.kind} could be called: {type(exc).__name__}: {exc}")


# why join_group_held is N/A for an adapter that lacks the step though its client can join a
# group: the operation (two consumers of one group, the first with client.id SILENT_MEMBER, whose
# heartbeats the scenario black-holes) is written for our two faces, confluent-kafka, kafka-python,
# aiokafka, kafkajs, franz-go, Sarama and the Java client (group.protocol=classic)
JOIN_GROUP_HELD_NA = ("join_group_held (a silent first member, client.id SILENT_MEMBER, then a second member's timed "
                      "join) is not written for this adapter yet; the adapters of our client, confluent-kafka, "
                      "kafka-python, aiokafka, kafkajs, franz-go, Sarama and java run it")


def supports_here(adapter: Adapter, steps: tuple[Operation, ...]) -> tuple[bool, str]:
    if any(s.kind == "join_group_held" for s in steps) and "join_group_held" not in adapter.operations:
        return False, JOIN_GROUP_HELD_NA
    return Adapter.supports(adapter, steps)
