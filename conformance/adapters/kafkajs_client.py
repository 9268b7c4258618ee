"""kafkajs (Node.js, pinned in the repository's package.json, installed into node_modules by
``bash dev/install-clients``), driven through the line protocol by the program in
conformance/adapters/node/ (kafkajs-adapter.js; no build step: node runs it as it is).

The program maps the scenario's config to kafkajs's options and kafkajs's errors to the Java
client's exception names; each file cites the kafkajs source it relies on:

    node/kafkajs-config.js   request.timeout.ms -> requestTimeout, socket.connection.setup.timeout.ms
                             -> connectionTimeout, retry.backoff(.max).ms -> retry.initialRetryTime /
                             maxRetryTime, retries -> the producer's retry.retries, session.timeout.ms,
                             heartbeat.interval.ms, max.poll.interval.ms -> sessionTimeout,
                             heartbeatInterval, rebalanceTimeout, transaction.timeout.ms ->
                             transactionTimeout, fetch.max.wait.ms -> maxWaitTimeInMs; kafkajs's own
                             defaults for the rest, divided by the run's scale
    node/kafkajs-errors.js   KafkaJSRequestTimeoutError, KafkaJSTimeout, KafkaJSLockTimeout ->
                             TimeoutException; KafkaJSProtocolError (and KafkaJSCreateTopicError)
                             by its code (REQUEST_TIMED_OUT -> TimeoutException, ...);
                             KafkaJSNumberOfRetriesExceeded / KafkaJSNonRetriableError by the error
                             they gave up on (their ``cause``); otherwise kafkajs's own name
    node/kafkajs-ops.js,     what each operation calls and times
    node/kafkajs-txn.js

N/A, from what kafkajs 2.2.4 does not have:

    position              no such call: the consumer resolves its fetch offsets inside consumer.run()
    configure_producer    no delivery.timeout.ms and no linger.ms, so no rule tying them together
    poll with timeout 0   no poll(): records come to consumer.run()'s callback, nothing returns "what
                          is already fetched" at once (a poll with a deadline is run() until it, then stop())
    kip848_*              kafkajs speaks the classic group protocol only (no ConsumerGroupHeartbeat
                          among protocol/requests)

Calls that take no deadline (admin.fetchOffsets, fetchTopicOffsets(ByTimestamp), fetchTopicMetadata,
deleteTopicRecords, consumer.commitOffsets, consumer.disconnect; kafkajs has no default.api.timeout.ms)
run with the step's deadline as the application's: the program races the promise against a timer and
abandons it (kafkajs-ops.js withinDeadline). deleteTopicRecords' DeleteRecords always carries timeout_ms
5000 (protocol/requests/deleteRecords/v0/request.js), which the purgatory contract judges as sent.

N/A also for the settings it lacks (``KAFKAJS_LACKS``): a contract holding a client to one is N/A for
kafkajs, its other contracts still judge it. admin_list_topics runs without the step's deadline
(admin.listTopics() takes none): its scenarios judge the listing and the broker's side.

Known pitfall: kafkajs asks ApiVersions once per broker (broker/index.js connect(): ``if
(!this.versions)``) and reconnects without it; a request timeout leaves the connection open
(network/requestQueue: the request is rejected, the socket kept).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from conformance.adapters.base import RunEnv
from conformance.adapters.line_protocol import LineProtocolAdapter
from conformance.adapters.py_common import watchdog_s
from conformance.cache_dir import cache_dir, install_hint, source_checkout
from conformance.client_capabilities import ClientCapabilities, Lack, Pin, fixed_setup_timeout, lacks_rebootstrap
from conformance.model import Operation, Outcome

DRIVER = Path(__file__).resolve().parent / "node" / "kafkajs-adapter.js"
KAFKAJS_OPERATIONS = frozenset({
    "produce", "produce_pipelined", "poll", "committed", "end_offsets", "beginning_offsets", "offsets_for_times",
    "list_topics", "partitions_for", "commit_sync", "admin_list_topics", "create_topics", "delete_records",
    "transaction", "txn_zombie", "txn_abort_then_commit", "read_committed_behind_open_txn", "join_group_held", "close", "txn_error_probe",
})
# calls kafkajs gives no deadline (no timeout argument, no default.api.timeout.ms)
NO_DEADLINE = MappingProxyType({
    "committed": "admin.fetchOffsets()", "end_offsets": "admin.fetchTopicOffsets()",
    "beginning_offsets": "admin.fetchTopicOffsets()", "offsets_for_times": "admin.fetchTopicOffsetsByTimestamp()",
    "list_topics": "admin.fetchTopicMetadata()", "partitions_for": "admin.fetchTopicMetadata()",
    "commit_sync": "consumer.commitOffsets()",
    "delete_records": ("admin.deleteTopicRecords() (its DeleteRecords always carries timeout_ms 5000: "
                       "protocol/requests/deleteRecords/v0/request.js)"),
})
NOT_THERE = MappingProxyType({
    "position": "kafkajs has no position(): its consumer resolves fetch offsets inside consumer.run()",
    "configure_producer": ("kafkajs has no delivery.timeout.ms and no linger.ms, so no rule tying them to "
                           "request.timeout.ms to validate"),
})
KIP848_NA = ("kafkajs 2.2.4 speaks the classic group protocol only (JoinGroup/SyncGroup/Heartbeat): no "
             "ConsumerGroupHeartbeat among its protocol/requests, so no group.protocol=consumer (KIP-848)")
POLL_NA = ("kafkajs has no poll(): records come to consumer.run()'s eachBatch callback, so nothing returns what is "
           "already fetched at once (a poll with a deadline is run() until it, then stop())")
KAFKAJS_LACKS = MappingProxyType({
    "delivery.timeout.ms": ("kafkajs has no delivery.timeout.ms: send() fails once the retrier's retries are spent "
                            "(producer retry.retries, 5; retry/index.js), each attempt bounded by requestTimeout"),
    "max.block.ms": ("kafkajs has no max.block.ms: a send waiting for metadata, and transaction()/commit(), end when "
                     "their requests' requestTimeout and the retrier's retries do"),
    "default.api.timeout.ms": "kafkajs has no default.api.timeout.ms: its admin and consumer calls take no deadline",
})
# args in unscaled seconds (pauses between calls): the program sleeps real seconds
SCALED_ARGS_S = ("pause_s", "gap_s", "open_s", "clear_s")

CONSUMER_JS, PRODUCER_JS, ADMIN_JS = "src/consumer/index.js", "src/producer/index.js", "src/admin/index.js"
_CONTRACTS_NA = "their other contracts judge kafkajs"


_ABANDONED = ("a Node application gives a promise that takes no deadline one by racing it against a timer and "
              "abandoning it then (the adapter's withinDeadline, kafkajs-ops.js; the client is disconnected as the step "
              "ends): the matrix judges how the call ends and what kafkajs sends meanwhile")


def _no_deadline(*steps: str) -> Lack:
    calls = " and ".join(dict.fromkeys(NO_DEADLINE[s] for s in steps))
    verb = "take" if " and " in calls else "takes"
    return Lack(f"kafkajs's {calls} {verb} no deadline (no timeout argument) and kafkajs has no default.api.timeout.ms: "
                "only requestTimeout and its retrier bound it", CONSUMER_JS if steps == ("commit_sync",) else ADMIN_JS,
                judged=_ABANDONED)


CAPABILITIES = ClientCapabilities(
    client="kafkajs", pin=Pin("package.json", "kafkajs"), source="https://github.com/tulios/kafkajs/blob/v{version}/{path}",
    has=("calls on one client", "transactions", "consumer calls", "create_topics(timeout)",
         "SASL", "socket.connection.setup.timeout.ms", "rebootstrap when brokers are gone"),
    lacks=MappingProxyType({
        "delivery.timeout.ms": Lack(KAFKAJS_LACKS["delivery.timeout.ms"], PRODUCER_JS, judged=_CONTRACTS_NA),
        "max.block.ms": Lack(KAFKAJS_LACKS["max.block.ms"], PRODUCER_JS, judged=_CONTRACTS_NA),
        "linger.ms": Lack(f"kafkajs has no linger.ms: createProducer takes no such option ({PRODUCER_JS}), each "
                          "producer.send() is its own request", PRODUCER_JS),
        "poll(timeout)": Lack(f"kafkajs has no poll(): records come to consumer.run()'s eachBatch callback ({CONSUMER_JS} "
                              "run)", CONSUMER_JS,
                              judged="consumer.run() until the step's deadline, then stop()"),
        "poll(0)": Lack(f"{POLL_NA} ({CONSUMER_JS} run)", CONSUMER_JS),
        "committed(timeout)": _no_deadline("committed"),
        "position(timeout)": Lack(f"{NOT_THERE['position']} ({CONSUMER_JS})", CONSUMER_JS),
        "offsets(timeout)": _no_deadline("end_offsets", "offsets_for_times"),
        "list_topics(timeout)": _no_deadline("list_topics"),
        "commit_sync(timeout)": _no_deadline("commit_sync"),
        "close(timeout)": Lack("kafkajs's consumer.disconnect() takes no deadline (it stops the runner, waiting for the "
                               f"fetch in flight: {CONSUMER_JS} disconnect)", CONSUMER_JS, judged=_ABANDONED),
        "default.api.timeout.ms": Lack(KAFKAJS_LACKS["default.api.timeout.ms"], ADMIN_JS, judged=_CONTRACTS_NA),
        "KIP-848": Lack(KIP848_NA, "src/protocol/requests"),
        "max.poll.interval.ms": Lack(
            f"kafkajs has no max.poll.interval.ms: its consumer takes sessionTimeout, rebalanceTimeout and "
            f"heartbeatInterval ({CONSUMER_JS}), and no poll timer (records come to consumer.run()'s callbacks)",
            CONSUMER_JS),
        "delete_records(timeout)": Lack(
            f"kafkajs's {NO_DEADLINE['delete_records']} takes no timeout (no timeout argument: {ADMIN_JS} "
            "deleteTopicRecords)", "src/protocol/requests/deleteRecords/v0/request.js",
            judged=_ABANDONED + "; the DeleteRecords it sends carries its fixed 5000 ms, which the purgatory contract "
                                "still judges against the call's deadline"),
        **lacks_rebootstrap(
            "kafkajs has no metadata recovery strategy: the Kafka client's options (src/index.js) have no such "
            "setting nor a rebootstrap trigger, and its error codes (src/protocol/error.js) stop before "
            "REBOOTSTRAP_REQUIRED", "src/protocol/error.js",
            names=("REBOOTSTRAP_REQUIRED", "metadata.recovery.rebootstrap.trigger.ms", "metadata.recovery.strategy")),
        "share groups": Lack("kafkajs has no share consumer: its requests stop short of ShareGroupHeartbeat and "
                             "ShareFetch (src/protocol/requests/index.js)", "src/protocol/requests/index.js"),
        "socket.connection.setup.timeout.max.ms": fixed_setup_timeout("kafkajs", "connectionTimeout (one setTimeout per connect: "
                                                     "src/network/connection.js)", "src/network/connection.js"),
    }),
    notes=MappingProxyType({"create_topics(timeout)": "admin.createTopics({timeout})",
                            "rebootstrap when brokers are gone": "BrokerPool.findConnectedBroker "
                                                                 "(src/cluster/brokerPool.js): when no known broker "
                                                                 "connects, it connects to a seed broker again",
                            "socket.connection.setup.timeout.ms": "connectionTimeout",
                            "consumer calls": "admin.fetchOffsets, fetchTopicOffsets(ByTimestamp), fetchTopicMetadata, "
                                              "consumer.commitOffsets, disconnect (no position())"}),
)


def node_modules() -> Path:
    """Where dev/install-clients puts kafkajs (npm ci in the checkout), else the cache's node/node_modules."""
    checkout = source_checkout()
    return checkout / "node_modules" if checkout is not None else cache_dir("node", "node_modules")


def kafkajs_version() -> str | None:
    try:
        return str(json.loads((node_modules() / "kafkajs" / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


class KafkajsAdapter(LineProtocolAdapter):
    name = "kafkajs"
    sasl = True      # security.protocol SASL_* and sasl.* -> new Kafka({sasl: {mechanism, username, password}})
    operations = KAFKAJS_OPERATIONS
    lacks = MappingProxyType({**KAFKAJS_LACKS, "socket.connection.setup.timeout.max.ms": CAPABILITIES.lacks["socket.connection.setup.timeout.max.ms"].reason})
    capabilities = CAPABILITIES
    # the same call once, untimed, on the same admin client (or member) first: kafkajs-ops.js adminCall, commitSync
    warm_up_calls = frozenset({"committed", "end_offsets", "beginning_offsets", "offsets_for_times", "list_topics",
                               "partitions_for", "commit_sync"})

    def command(self) -> list[str] | None:
        node = shutil.which("node")
        if node is None or kafkajs_version() is None or not DRIVER.is_file():
            return None
        return [node, str(DRIVER)]

    def not_built_reason(self) -> str:
        if shutil.which("node") is None:
            return "node is not installed (the kafkajs adapter needs Node.js 18+)"
        return (f"kafkajs is not installed ({node_modules() / 'kafkajs'} missing; package.json pins it): "
                f"{install_hint('dev/install-clients')}")

    def environment(self) -> dict[str, str]:
        return {**os.environ, "NODE_PATH": str(node_modules()), "KAFKAJS_NO_PARTITIONER_WARNING": "1"}

    def client_version(self) -> str | None:
        return kafkajs_version()

    def supports(self, steps: tuple[Operation, ...]) -> tuple[bool, str]:
        for step in steps:
            if step.kind.startswith("kip848_"):
                return False, KIP848_NA
            if step.kind in NOT_THERE:
                return False, NOT_THERE[step.kind]
            if step.kind == "poll" and not step.timeout_s:
                return False, POLL_NA
        return super().supports(steps)

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        js_env = replace(env, config={**env.config, "adapter.scale": env.scale})
        return super().run_blocking(tuple(_scaled_step(s, env) for s in steps), js_env)


def _scaled_step(step: Operation, env: RunEnv) -> Operation:
    """Pauses in real seconds, and the watchdog (py_common.watchdog_s) past which the program
    reports a call that has not returned as NoReturn."""
    args = {k: v / env.scale if k in SCALED_ARGS_S else v for k, v in step.args.items()}
    args["watchdog_s"] = watchdog_s(step, env)
    return replace(step, args=args)
