"""What each client of the conformance matrix can and cannot do, declared once per adapter.

A **capability** is something a scenario may need of a client: a setting (delivery.timeout.ms), a
call with a deadline (committed(timeout)), a protocol (KIP-848), a way of being driven (calls on
one client). ``CAPABILITIES`` lists them, in the order docs/clients.md shows them.

A scenario **needs** the capabilities of its steps (``needs``: a committed step with a deadline
needs committed(timeout), a transaction step transactions...), those its set-up implies (SASL, a
sub-second transaction.timeout.ms once scaled) and
those it names itself (``Scenario.needs``: the setting it is about, as kip91.delivery-timeout-in-
flight is about delivery.timeout.ms).

Each adapter declares its client's capabilities (``Adapter.capabilities``, a ``ClientCapabilities``):
every capability is either had or lacked, and each lack says why with the client's own docs or
source (file: function), linked at the pinned version. A lack either takes the scenarios that need
it out of the client's column (N/A, naming the capability), or, when the lack says what stands in
for it (``Lack.judged``), the matrix runs them and judges what the client does instead (save the
scenarios of its ``Lack.not_in``, whose every contract is about the capability itself). An N/A that
no lack explains is named as an exception (``ClientCapabilities.not_driven``): the client has what
the scenario needs, the adapter does not drive it (yet). The N/As that are about the run, not the
client (a client not installed, ``--bootstrap``, ``--broker kafka``), are ``ENVIRONMENT``.

docs/clients.md is generated from the declarations: ``python -m conformance.capabilities --write
docs/clients.md``; tests/conformance/capabilities/test_capabilities.py fails when it is stale, and when an adapter's N/A
and its declaration disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from conformance.model import Operation, Scenario
from conformance.scenarios_security import needs_sasl


@dataclass(frozen=True)
class Capability:
    name: str
    what: str        # what having it means, in one sentence


CAPABILITIES: tuple[Capability, ...] = (
    Capability("delivery.timeout.ms", "a bound on a record's whole life, from send() to its delivery report, retries "
                                      "included (KIP-91)"),
    Capability("max.block.ms", "a bound on how long send() waits for metadata and a transactional call blocks (KIP-91)"),
    Capability("linger.ms", "a setting for how long the producer waits to fill a batch"),
    Capability("calls on one client", "the application makes call after call on one client it keeps: a send awaited "
                                      "before the next, two sends in flight, a topic listing twice"),
    Capability("transactions", "a transactional producer the application drives: init, begin, send, commit, each a "
                               "call of its own"),
    Capability("poll(timeout)", "a poll that returns the records fetched by its deadline"),
    Capability("poll(0)", "a poll that returns at once with what is already fetched"),
    Capability("consumer calls", "the calls besides poll: committed offsets, offsets by watermark or time, topic "
                                 "metadata, a synchronous commit, close"),
    Capability("committed(timeout)", "committed offsets fetched with a deadline of the call's own (KIP-266)"),
    Capability("position(timeout)", "the fetch position, resolved with a deadline of the call's own (KIP-266)"),
    Capability("offsets(timeout)", "end offsets, beginning offsets and offsets by time, each with a deadline of the "
                                   "call's own (KIP-266)"),
    Capability("list_topics(timeout)", "topic metadata (all topics, one topic's partitions) with a deadline of the "
                                       "call's own (KIP-266)"),
    Capability("commit_sync(timeout)", "a synchronous commit with a deadline of the call's own (KIP-266)"),
    Capability("close(timeout)", "a consumer's close bounded by a deadline of the call's own (KIP-266)"),
    Capability("default.api.timeout.ms", "the deadline of a consumer call given none (KIP-266)"),
    Capability("KIP-848", "the consumer group protocol of KIP-848 (group.protocol=consumer: ConsumerGroupHeartbeat)"),
    Capability("max.poll.interval.ms", "a member that stops polling leaves its group at this interval"),
    Capability("create_topics(timeout)", "an admin call that creates topics, with the operation timeout it sends "
                                         "(CreateTopics' timeout_ms)"),
    Capability("delete_records(timeout)", "an admin call that deletes records, with the operation timeout it sends "
                                          "(DeleteRecords' timeout_ms)"),
    Capability("SASL", "SASL authentication (the security scenarios use SCRAM-SHA-256)"),
    Capability("socket.connection.setup.timeout.ms", "a bound on setting a connection up: TCP, then the SASL handshake "
                                                     "(KIP-601)"),
    Capability("rebootstrap when brokers are gone", "the client goes back to bootstrap.servers when no broker it "
                                                    "learnt of can be reached (KIP-899)"),
    Capability("REBOOTSTRAP_REQUIRED", "the client goes back to bootstrap.servers at once when a broker answers "
                                       "Metadata with REBOOTSTRAP_REQUIRED (KIP-1102)"),
    Capability("metadata.recovery.rebootstrap.trigger.ms", "the client goes back to bootstrap.servers when no "
                                                           "Metadata answer helped for this long (KIP-1102)"),
    Capability("metadata.recovery.strategy", "a setting that turns rebootstrap off (none): the client then keeps the "
                                             "brokers it knows, however long they starve it (KIP-899)"),
    Capability("share groups", "a share consumer (KIP-932): records acquired under the broker's locks, acknowledged "
                               "one by one (accept, release, reject, renew), with commitSync and close deadlines"),
    Capability("socket.connection.setup.timeout.max.ms", "each consecutive failed connection attempt to a broker gets "
                                                         "twice the setup timeout (±20 %), up to this (KIP-601)"),
)
NAMES: tuple[str, ...] = tuple(c.name for c in CAPABILITIES)
# the default --scale; librdkafka refuses a transaction.timeout.ms under 1000 ms, so a scenario's
# own, divided by the scale its real-time runs use, must stay at 1 s or more (its max_scale)
TXN_SCALE = 30.0
TXN_TIMEOUT_FLOOR_MS = 1000

# the capability each consumer call needs when its step has a deadline
_DEADLINE = {"committed": "committed(timeout)", "position": "position(timeout)", "end_offsets": "offsets(timeout)",
             "beginning_offsets": "offsets(timeout)", "offsets_for_times": "offsets(timeout)",
             "list_topics": "list_topics(timeout)", "partitions_for": "list_topics(timeout)",
             "commit_sync": "commit_sync(timeout)", "close": "close(timeout)"}
_STEP = {"transaction": "transactions", "txn_zombie": "transactions", "read_committed_behind_open_txn": "transactions",
         "txn_abort_then_commit": "transactions", "txn_error_probe": "transactions",
         "produce_pipelined": "calls on one client", "create_topics": "create_topics(timeout)",
         "delete_records": "delete_records(timeout)"}

# N/As about the run, not the client: no declaration explains them, and none needs to
ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("the client is not installed", "the adapter's available() says what is missing and how to install it"),
    ("virtual time needs the embedded emulator", "our async face runs in virtual time over the emulator's in-memory "
                                                 "connections: not against --bootstrap or --broker kafka"),
    ("needs fault injection or broker settings", "--bootstrap runs only the scenarios that need neither"),
    ("not on Apache Kafka", "--broker kafka: a scenario that needs the emulator (its not_on_kafka, or more brokers "
                            "than the run's cluster)"),
    ("the broker does not serve KIP-848", "java-consumer-protocol's and franz-go's KIP-848 steps against a broker "
                                          "without ConsumerGroupHeartbeat"),
    ("dropped connection attempts need Linux", "over TCP the emulator has the kernel drop the client's SYNs with a "
                                               "full accept queue (broker_emu/syn_gate.py), which is Linux's rule"),
)


def step_needs(step: Operation) -> set[str]:
    kind, args = step.kind, step.args
    want = {_STEP[kind]} if kind in _STEP else set()
    if (kind == "produce" and args.get("count", 1) > 1) or (kind == "admin_list_topics" and args.get("repeat", 1) > 1):
        want.add("calls on one client")
    if kind == "poll":
        want.add("poll(timeout)" if step.timeout_s else "poll(0)")
    if kind in _DEADLINE:
        want.add("consumer calls")
        if step.timeout_s is not None:
            want.add(_DEADLINE[kind])
    if kind.startswith("kip848_"):
        want.add("KIP-848")
    if kind.startswith("share_"):
        want.add("share groups")
    return want


def needs(scenario: Scenario) -> tuple[str, ...]:
    """The capabilities ``scenario`` needs of a client, in ``CAPABILITIES`` order."""
    unknown = sorted(set(scenario.needs) - set(NAMES))
    if unknown:
        raise ValueError(f"{scenario.id} needs {', '.join(unknown)}: not a capability (conformance/client_capabilities.py)")
    want = set(scenario.needs)
    for step in scenario.steps:
        want |= step_needs(step)
    if needs_sasl(scenario):
        want.add("SASL")
    txn_timeout = scenario.client_config.get("transaction.timeout.ms")
    if txn_timeout is not None and txn_timeout / scenario.scale_in(TXN_SCALE) < TXN_TIMEOUT_FLOOR_MS:
        raise ValueError(f"{scenario.id}: transaction.timeout.ms={txn_timeout} scaled by {scenario.scale_in(TXN_SCALE):g} is "
                         f"under {TXN_TIMEOUT_FLOOR_MS} ms, which librdkafka refuses: give the scenario a max_scale")
    return tuple(name for name in NAMES if name in want)


@dataclass(frozen=True)
class Lack:
    """Why a client lacks a capability, in its own terms. ``source``: where its docs or source say
    so, a path in the client's repository (linked at the pinned version) or a URL. ``judged``:
    empty, the scenarios that need it are N/A for the client; else what stands in for it, and the
    matrix runs those scenarios and judges what the client does instead, except in ``not_in``:
    (scenario id, why) pairs of the scenarios where nothing stands in (every contract of the
    scenario is about the capability itself), N/A all the same."""

    reason: str
    source: str
    judged: str = ""
    not_in: tuple[tuple[str, str], ...] = ()

    def stands_in(self, scenario: Scenario) -> bool:
        """Whether something stands in for the capability in ``scenario`` (the matrix runs it)."""
        return bool(self.judged) and all(scenario.id != id_ for id_, _ in self.not_in)


@dataclass(frozen=True)
class Pin:
    """Where the client's version is pinned: ``file`` in the repository, ``name`` in it (a Python
    requirement, an npm dependency, a Go module, a Maven property). ``version``: for a client no
    file pins (Debian's kcat), the version the matrix is measured with."""

    file: str
    name: str
    version: str = ""


@dataclass(frozen=True)
class ClientCapabilities:
    """One adapter's declaration of its client's capabilities (see the module's docstring)."""

    client: str                            # the adapter's name
    pin: Pin
    source: str                            # its repository's files at a version: "https://.../blob/v{version}/{path}"
    has: tuple[str, ...]
    lacks: Mapping[str, Lack]
    # an N/A no lack explains: a scenario id, an operation or a capability the client has -> why this adapter
    # does not run it
    not_driven: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    notes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))   # how it has one, where useful
    bundles: str = ""                      # what it is built on, shown beside its version ("librdkafka 2.16.0")

    def __post_init__(self) -> None:
        declared = list(self.has) + list(self.lacks)
        if sorted(declared) != sorted(NAMES):
            missing, extra = set(NAMES) - set(declared), set(declared) - set(NAMES)
            twice = {n for n in declared if declared.count(n) > 1}
            raise ValueError(f"{self.client}: every capability is had or lacked, once (missing {sorted(missing)}, "
                             f"unknown {sorted(extra)}, twice {sorted(twice)})")

    def missing(self, scenario: Scenario) -> list[str]:
        """The capabilities ``scenario`` needs that the client lacks, with nothing standing in."""
        return [name for name in needs(scenario) if name in self.lacks and not self.lacks[name].stands_in(scenario)]

    def exception(self, scenario: Scenario) -> tuple[str, str] | None:
        """The adapter's own reason not to run ``scenario`` (``not_driven``), if one applies."""
        keys = [scenario.id, *(s.kind for s in scenario.steps), *needs(scenario)]
        return next(((k, self.not_driven[k]) for k in keys if k in self.not_driven), None)

    def runs(self, scenario: Scenario) -> bool:
        return not self.missing(scenario) and self.exception(scenario) is None

    def link(self, source: str, version: str) -> str:
        """A lack's ``source`` as a link from docs/: a URL as it is, "repo:PATH" a file of this
        repository, else a path in the client's repository at ``version``."""
        if "://" in source:
            return source
        if source.startswith(REPO):
            return "../" + source[len(REPO):]
        return self.source.format(version=version, path=source)


REPO = "repo:"   # a Lack.source in this repository

REBOOTSTRAP = ("rebootstrap when brokers are gone", "REBOOTSTRAP_REQUIRED", "metadata.recovery.rebootstrap.trigger.ms",
               "metadata.recovery.strategy")


def lacks_rebootstrap(reason: str, source: str, names: tuple[str, ...] = REBOOTSTRAP) -> dict[str, Lack]:
    """One reason for each rebootstrap capability a client lacks: a client without KIP-899 and KIP-1102
    lacks them for the same reason (``names``: the ones it lacks, all four by default)."""
    return {name: Lack(reason, source) for name in names}


def fixed_setup_timeout(client: str, setting: str, source: str) -> Lack:
    """Why a client lacks KIP-601's growing setup timeout: one fixed bound per attempt. The
    scenario still runs: its other contracts judge the client, the growth contract is N/A."""
    return Lack(f"{client} has no socket.connection.setup.timeout.max.ms: it bounds every connection attempt by the "
                f"same {setting}, which nothing makes grow per failed attempt (KIP-601)", source,
                judged="the scenario runs with the fixed bound; the contract on the growth is N/A (Adapter.lacks)")


def declaration(adapter: Any) -> ClientCapabilities | None:
    return getattr(adapter, "capabilities", None)


# capabilities no adapter's steps reveal (a setting every client is handed the same way), and share groups, whose
# steps an adapter without them has none of (its N/A would otherwise name a missing step, not the client's lack):
# the declared lack alone makes the scenarios that need them N/A (Adapter.supports_scenario)
DECLARED_ONLY = (*REBOOTSTRAP, "share groups")


def declared_lack(adapter: Any, scenario: Scenario) -> str:
    """Why ``adapter``'s client cannot run ``scenario`` by its declaration alone ("" if nothing says so)."""
    declared = declaration(adapter)
    missing = declared.missing(scenario) if declared is not None else []
    name = next((n for n in DECLARED_ONLY if n in missing), None)
    return f"lacks {name}: {declared.lacks[name].reason}" if declared is not None and name else ""


def name_the_capability(adapter: Any, scenario: Scenario, why: str) -> str:
    """An adapter's N/A reason, made to name the capability its client lacks ("lacks X: <reason>"),
    or else the declared exception that explains it ("X not run by this adapter: <reason>");
    unchanged when it already names it, or when the adapter declares nothing."""
    declared = declaration(adapter)
    if declared is None:
        return why
    missing = declared.missing(scenario)
    if missing:
        return why if any(name in why for name in missing) else f"lacks {missing[0]}: {why}"
    exception = declared.exception(scenario)
    if exception is not None and exception[1] not in why:
        # the declared reason, not the bare "has no X": the client may well have it, the adapter does not drive it
        return f"{exception[0]} not run by this adapter: {exception[1]}"
    return why
