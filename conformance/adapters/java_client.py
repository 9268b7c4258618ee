"""Apache Kafka's Java client (kafka-clients, pinned in conformance/adapters/java/pom.xml), the
reference implementation of KIP-19, KIP-91 and KIP-266, driven through the line protocol by the
program in conformance/adapters/java/ (built by dev/build-adapters/java).

Each operation is one call of the Java client's own API, on a client built for the step from the
scenario's config (Kafka's dotted names, passed through as they are) and timed in the program
around that call:

    operation           Java call                                         deadline (contract parameter)
    produce             KafkaProducer.send(record).get()                  delivery.timeout.ms (the record's life),
                                                                          request.timeout.ms (each Produce),
                                                                          max.block.ms (send() waiting for metadata)
    produce_pipelined   count send()s, then every Future.get()            as produce
    configure_producer  new KafkaProducer(config)                         (its ConfigException, unwrapped)
    poll                assign, seek, KafkaConsumer.poll(Duration)        the step's timeout (0 when none)
    committed           KafkaConsumer.committed(Set, Duration)            the step's timeout, else default.api.timeout.ms
    position            KafkaConsumer.position(tp, Duration)              idem
    end_offsets         KafkaConsumer.endOffsets(list, Duration)          idem
    beginning_offsets   KafkaConsumer.beginningOffsets(list, Duration)    idem
    offsets_for_times   KafkaConsumer.offsetsForTimes(map, Duration)      idem
    list_topics         KafkaConsumer.listTopics(Duration)                idem
    partitions_for      KafkaConsumer.partitionsFor(topic, Duration)      idem
    commit_sync         KafkaConsumer.commitSync(map, Duration)           idem
    close               KafkaConsumer.close(CloseOptions.timeout(d))      the step's timeout, else close()'s own 30 s
    admin_list_topics   Admin.listTopics(ListTopicsOptions.timeoutMs)     the step's timeout, else the admin's
                                                                          default.api.timeout.ms
    join_group_held     subscribe + poll: a silent member, then the       JoinGroup's own: max.poll.interval.ms + 5 s
                        timed one, until it owns partitions               (classic protocol only: JoinGroupHeld.java)

The share steps (``share_lock_expires``, ``share_renew``, ``share_ack_black_holed``,
``share_delivery_limit``, ``share_close_pending``: conformance/scenarios_share.py) are stories told
with KafkaShareConsumers of their own in explicit acknowledgement mode (ShareSteps.java): the
group's configs set first (IncrementalAlterConfigs on the GROUP resource), the calls the contracts
hold to a deadline timed inside (commitSync(Duration), close(Duration): the step's timeout), their
Kafka-time durations (``process_ms``, ``renew_ms``, ``watch_ms``, ``close_ms`` and the group's
``*.ms`` configs) scaled here.

Consumer steps take ``warm_up: true`` (one untimed call first, so connections are up and the
coordinator known when the timed call starts; kip266.timeout-zero-warm-attempts-once sets it). Further steps for
tests/realclients/test_java_client.py (produce_batch, read_partition, group_consume, admin_*) are
listed by the program's hello under "extras".

Values as the other adapters report them: produce the last offset, poll the number of records,
committed the offset (None when nothing is committed), position an offset, end/beginning offsets
and offsets_for_times {partition: offset}, list_topics and admin_list_topics the sorted names,
partitions_for the partition ids. A failed call reports the Java exception's simple class name
(``TimeoutException``, ``ConfigException``...).

The Java client's own defaults for the timeouts a scenario does not set are scaled here like the
scenario's (request.timeout.ms 30 s, delivery.timeout.ms 120 s, max.block.ms 60 s,
default.api.timeout.ms 60 s, and the backoffs and connection set-up timeouts), so a scaled run
is Kafka's at full length, sped up.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from conformance.adapters.base import CONSUMER_CALLS, RunEnv, scaled_ms
from conformance.adapters.line_protocol import LineProtocolAdapter, encode_args
from conformance.cache_dir import cache_dir, install_hint
from conformance.client_capabilities import NAMES, ClientCapabilities, Pin
from conformance.model import Operation, Outcome

# Kafka's defaults (ms) for the Java client's timers, scaled with the run unless the scenario sets them
JAVA_DEFAULTS_MS = {
    "request.timeout.ms": 30_000, "delivery.timeout.ms": 120_000, "max.block.ms": 60_000,
    "default.api.timeout.ms": 60_000, "retry.backoff.ms": 100, "retry.backoff.max.ms": 1_000,
    "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 1_000,
    "socket.connection.setup.timeout.ms": 10_000, "socket.connection.setup.timeout.max.ms": 30_000,
}
# args given in unscaled seconds (pauses between calls): the program sleeps real seconds
SCALED_ARGS_S = ("pause_s", "gap_s", "open_s", "clear_s")
# produce_pipelined's gap lets the first batch leave before the second record is sent; scaled
# below this (real seconds) the Java sender thread has not yet connected to the leader and both
# records join one batch (the scenario wants two Produce requests on one connection)
MIN_GAP_S = 0.05

JAVA_OPERATIONS = frozenset({
    "produce", "poll", "committed", "position", "end_offsets", "beginning_offsets", "offsets_for_times",
    "list_topics", "partitions_for", "commit_sync", "close", "admin_list_topics", "configure_producer",
    "produce_pipelined", "transaction", "txn_zombie", "read_committed_behind_open_txn", "txn_abort_then_commit",
    "txn_error_probe",
    "kip848_heartbeats", "kip848_late_poll", "kip848_member_crash", "kip848_slow_revoke", "kip848_stale_commit",
    "kip848_coordinator_dies", "create_topics", "delete_records", "join_group_held",
    # the share scenarios' stories (ShareSteps.java), each on KafkaShareConsumers of its own
    "share_lock_expires", "share_renew", "share_ack_black_holed", "share_delivery_limit", "share_close_pending",
})
# the share steps' Kafka-time durations (args, and the group configs they set), which the program waits in real ms
SHARE_SCALED_MS = ("process_ms", "renew_ms", "watch_ms", "close_ms")
# what the Java client does through a consumer group's membership (KIP-848's ConsumerGroupHeartbeat
# under group.protocol=consumer). Offsets by the coordinator (committed, commit_sync: FindCoordinator,
# OffsetFetch, OffsetCommit without a member epoch) need no membership and run everywhere.
GROUP_OPERATIONS = frozenset({"kip848_heartbeats", "kip848_late_poll", "kip848_member_crash",
                              "kip848_slow_revoke", "kip848_stale_commit", "kip848_coordinator_dies"})
# server.joingroup-held is about a classic JoinGroup the coordinator holds (DelayedJoin): under
# group.protocol=consumer the Java client sends none (AsyncKafkaConsumer's membership is
# ConsumerGroupHeartbeat; only ClassicKafkaConsumer's AbstractCoordinator builds a JoinGroupRequest)
JOIN_GROUP_HELD_CLASSIC_ONLY = ("join_group_held times a classic JoinGroup the coordinator holds; under group.protocol=consumer "
                                "kafka-clients sends no JoinGroup (AsyncKafkaConsumer joins by ConsumerGroupHeartbeat): the "
                                "java adapter runs it, the same client with group.protocol=classic")


# kafka-clients has every capability of the table
_JAVA_PIN = Pin("conformance/adapters/java/pom.xml", "kafka.version")
_JAVA_SOURCE = "https://github.com/apache/kafka/blob/{version}/{path}"
_JAVA_HAS = NAMES
_JAVA_LACKS: MappingProxyType = MappingProxyType({})
JAVA_CAPABILITIES = ClientCapabilities(
    client="java", pin=_JAVA_PIN, source=_JAVA_SOURCE, has=_JAVA_HAS, lacks=_JAVA_LACKS,
    not_driven=MappingProxyType({"KIP-848": ("this adapter runs kafka-clients with group.protocol=classic: the "
                                             "java-consumer-protocol adapter runs the KIP-848 steps")}))
JAVA_CONSUMER_PROTOCOL_CAPABILITIES = ClientCapabilities(
    client="java-consumer-protocol", pin=_JAVA_PIN, source=_JAVA_SOURCE, has=_JAVA_HAS, lacks=_JAVA_LACKS,
    not_driven=MappingProxyType({"join_group_held": JOIN_GROUP_HELD_CLASSIC_ONLY,
                                 "share groups": ("KafkaShareConsumer has no group.protocol: the java adapter runs the "
                                                  "share scenarios, the same client")}))


def _java_config(env: RunEnv) -> dict[str, Any]:
    config = {k: scaled_ms(v, env.scale) for k, v in JAVA_DEFAULTS_MS.items()}
    config.update(env.config)
    if "sasl.username" in config:
        # Java takes SCRAM credentials as a JAAS line (ScramLoginModule)
        user, password = config.pop("sasl.username"), config.pop("sasl.password", "")
        config["sasl.jaas.config"] = (f'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                      f'username="{user}" password="{password}";')
    # a request timeout longer than the backoff cap must not be dwarfed by it (Java's own ratio)
    if "delivery.timeout.ms" not in env.config:
        linger = int(config.get("linger.ms", 0))
        config["delivery.timeout.ms"] = max(config["delivery.timeout.ms"], int(config["request.timeout.ms"]) + linger)
    return config


WARM_UP_TOPIC = "jvm-warm-up"
WARM_UP_TIMEOUT_S = 60.0


def _step_request(step: Operation) -> dict[str, Any]:
    return {"kind": step.kind, "args": encode_args(step.args),
            "timeout_ms": None if step.timeout_s is None else int(round(step.timeout_s * 1000))}


def _scaled_step(step: Operation, scale: float) -> Operation:
    args = dict(step.args)
    for key in SCALED_ARGS_S:
        if key in args:
            args[key] = args[key] / scale
    for key in ("run_ms", "stall_ms", "revoke_ms", "every_ms"):   # kip848 steps: Kafka-time ms, the program sleeps real ms
        if key in args:
            args[key] = args[key] / scale
    if step.kind.startswith("share_"):
        for key in SHARE_SCALED_MS:
            if key in args:
                args[key] = scaled_ms(args[key], scale)
        args["group_config"] = {k: scaled_ms(v, scale) if k.endswith(".ms") else v
                                for k, v in args.get("group_config", {}).items()}
    if step.kind == "produce_pipelined":   # ours waits 10 ms (virtual) between the sends by default
        args["gap_s"] = max(args.get("gap_s", 0.0) / scale, MIN_GAP_S)
    if step.kind == "close":   # long enough, in real time, to connect and have the Fetch in flight
        args["poll_first_s"] = max(args.get("poll_first_s", 0.2) / scale, 0.3)
    return replace(step, args=args)


class JavaAdapter(LineProtocolAdapter):
    """kafka-clients with the classic group protocol (JoinGroup/SyncGroup/Heartbeat)."""

    name = "java"
    sasl = True
    operations = JAVA_OPERATIONS
    warm_up_calls = CONSUMER_CALLS   # Ops.consumerStep: the call once with no Duration (default.api.timeout.ms)
    group_protocol = "classic"
    capabilities = JAVA_CAPABILITIES

    def command(self) -> list[str] | None:
        java = shutil.which("java")
        jar = adapter_jar()
        if java is None or not jar.is_file():
            return None
        return [java, "-Xss1m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", str(jar)]

    def not_built_reason(self) -> str:
        if shutil.which("java") is None:
            return "java is not installed (the Java adapter needs Java 17)"
        return f"the Java adapter is not built ({adapter_jar()} missing): {install_hint('dev/build-adapters/java')}"

    def supports(self, steps: tuple[Operation, ...]) -> tuple[bool, str]:
        if self.group_protocol != "classic" and any(s.kind == "join_group_held" for s in steps):
            return False, JOIN_GROUP_HELD_CLASSIC_ONLY
        if self.group_protocol == "classic" and any(s.kind.startswith("kip848_") for s in steps):
            return False, "a KIP-848 step: the java-consumer-protocol adapter runs it (group.protocol=consumer)"
        return super().supports(steps)

    def hello(self) -> dict[str, Any]:
        fresh = self._hello is None or self._proc is None or self._proc.poll() is not None
        answer = super().hello()
        if fresh:
            self._warm_up()
        return answer

    def _warm_up(self) -> None:
        """A new JVM's first poll and first transaction load and compile the client's code inside the
        timed call: poll(2 s) scaled to 67 ms returned 0.5-7 s late in every cold JVM, 0.07 s of 0.07 s
        once the JVM had polled before (docs/findings.md, the summary). So each new program produces,
        polls and commits a transaction once, untimed, against a cluster of its own that no
        scenario's trace sees, and is then stopped."""
        from broker_emu.runtime import run_cluster_in_thread

        try:
            with run_cluster_in_thread(brokers=1, topics=[(WARM_UP_TOPIC, 1, 1)]) as tc:
                where = {"topic": WARM_UP_TOPIC, "partition": 0}
                steps = [Operation("produce", {**where, "value": b"warm", "count": 1}),
                         Operation("poll", {**where, "offset": "earliest"}, timeout_s=0.5),
                         Operation("transaction", where)]
                self._call({"cmd": "run", "bootstrap": tc.bootstrap, "client_id": "conformance-jvm-warm-up",
                            "config": {**JAVA_DEFAULTS_MS, "group.protocol": self.group_protocol},
                            "steps": [_step_request(s) for s in steps]}, WARM_UP_TIMEOUT_S)
        except Exception as exc:   # a JVM left cold is slower, not wrong: the run goes on
            logging.getLogger(__name__).warning("%s: the JVM warm-up failed: %s", self.name, exc)

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        config = {**_java_config(env), "group.protocol": self.group_protocol}
        java_env = replace(env, config=config)
        return super().run_blocking(tuple(_scaled_step(s, env.scale) for s in steps), java_env)


def emulator_has_kip848() -> bool:
    """Whether the emulator serves ConsumerGroupHeartbeat (KIP-848's group protocol)."""
    from broker_emu.handler_catalog import register_all
    from broker_emu.registry import REGISTRY
    from client.protocol import ApiKey

    register_all()
    return ApiKey.CONSUMER_GROUP_HEARTBEAT in REGISTRY


class JavaConsumerProtocolAdapter(JavaAdapter):
    """kafka-clients with ``group.protocol=consumer`` (KIP-848: the AsyncKafkaConsumer, whose
    group membership is ConsumerGroupHeartbeat). Its group operations need a broker serving
    KIP-848, as the emulator does (docs/kip848.md); ``broker_has_kip848`` overrides the check for
    another broker (``--bootstrap``). The consumer's other calls (assign, offsets, commits by the
    coordinator) run everywhere, on the new consumer's own code."""

    name = "java-consumer-protocol"
    group_protocol = "consumer"
    capabilities = JAVA_CONSUMER_PROTOCOL_CAPABILITIES

    def __init__(self, broker_has_kip848: bool | None = None) -> None:
        super().__init__()
        self.broker_has_kip848 = broker_has_kip848

    def supports(self, steps: tuple[Operation, ...]) -> tuple[bool, str]:
        if any(s.kind.startswith("share_") for s in steps):
            return False, "share groups not run by this adapter: " + JAVA_CONSUMER_PROTOCOL_CAPABILITIES.not_driven["share groups"]
        group_ops = sorted({s.kind for s in steps} & GROUP_OPERATIONS)
        has_848 = self.broker_has_kip848 if self.broker_has_kip848 is not None else emulator_has_kip848()
        if group_ops and not has_848:
            return False, (f"{', '.join(group_ops)} needs KIP-848's ConsumerGroupHeartbeat (group.protocol=consumer), "
                           "which this broker does not serve")
        return super().supports(steps)


def adapter_jar() -> Path:
    """Where dev/build-adapters/java puts the program: in the cache (conformance/cache_dir.py)."""
    return cache_dir("adapters", "java", "java-adapter.jar")


def java_available() -> bool:
    jar = adapter_jar()
    return shutil.which("java") is not None and jar.is_file() and os.access(jar, os.R_OK)
