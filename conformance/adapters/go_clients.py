"""The Go clients: franz-go (github.com/twmb/franz-go, pkg/kgo and pkg/kadm) and IBM sarama
(github.com/IBM/sarama), pinned in conformance/adapters/go/go.mod and driven through the line
protocol by the programs in conformance/adapters/go/cmd/ (built by dev/build-adapters/go into
adapters/go/ in the cache, conformance/cache_dir.py). Each step builds its own client from the scenario's config (Kafka's dotted
names, mapped to the client's settings in the program) and is timed in the program around the
client's own call.

Errors: a failed call reports Kafka's Java exception name where it is clearly the same error, and
keeps the client's own name in ``error_message``:

    Java name                         franz-go                                 sarama
    TimeoutException                  kgo.ErrRecordTimeout, context.            a socket deadline (net.Error
                                      DeadlineExceeded, a socket deadline       Timeout(), "i/o timeout"),
                                      (net.Error Timeout()), kerr               KError 7 REQUEST_TIMED_OUT
                                      REQUEST_TIMED_OUT
    ConfigException                   kgo.NewClient refusing its options        sarama.ConfigurationError
    <Kafka error>Exception            kerr.Error with a Java equivalent         sarama.KError with one
                                      (lineproto.JavaNames)                     (lineproto.JavaNames)
    otherwise                         kerr.<NAME>, ErrRecordRetries,            sarama.KError, ErrOutOfBrokers,
                                      ErrClientClosed, the Go type              ErrNotConnected, the Go type

Both clients' own fixed timers a scenario does not set (backoffs, metadata refresh ages, their
default request timeouts) are divided by the run's scale (``adapter.scale`` in the config the
program receives), so a scaled run is the client's own behaviour, sped up.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from conformance.adapters.base import RunEnv
from conformance.adapters.line_protocol import LineProtocolAdapter
from conformance.adapters.py_common import JOIN_GROUP_HELD_NA
from conformance.cache_dir import cache_dir, install_hint
from conformance.model import Operation, Outcome, Scenario

GO_OPERATIONS = frozenset({
    "produce", "produce_pipelined", "configure_producer", "poll", "committed", "end_offsets",
    "beginning_offsets", "offsets_for_times", "list_topics", "partitions_for", "commit_sync",
    "admin_list_topics",
})
# args in unscaled seconds (pauses): the program sleeps real seconds
SCALED_ARGS_S = ("pause_s", "gap_s")
MIN_GAP_S = 0.05   # produce_pipelined: the first batch must leave before the second record is sent


def _scaled_step(step: Operation, scale: float) -> Operation:
    args = dict(step.args)
    for key in SCALED_ARGS_S:
        if key in args:
            args[key] = args[key] / scale
    if step.kind == "produce_pipelined":
        args["gap_s"] = max(args.get("gap_s", 0.0) / scale, MIN_GAP_S)
    return replace(step, args=args)


def _unscaled(config: dict, scale: float) -> dict:
    """The scenario's own values of a scaled config (conformance.cluster_setup.scale_config's inverse)."""
    from conformance.cluster_setup import MS_KEYS_SUFFIX

    return {k: round(v * scale) if k.endswith(MS_KEYS_SUFFIX) and isinstance(v, (int, float))
            and not isinstance(v, bool) else v for k, v in config.items()}


def go_programs() -> Path:
    """Where dev/build-adapters/go puts the programs: adapters/go in the cache (conformance/cache_dir.py)."""
    return cache_dir("adapters", "go")


class GoAdapter(LineProtocolAdapter):
    """A Go client program in the cache's adapters/go/ (``program``)."""

    program = ""
    operations = GO_OPERATIONS
    no_position = ""
    no_close = ""

    def command(self) -> list[str] | None:
        path = go_programs() / self.program
        return [str(path)] if path.is_file() else None

    def not_built_reason(self) -> str:
        return (f"the {self.name} adapter is not built ({go_programs() / self.program} missing; it needs Go 1.26): "
                f"{install_hint('dev/build-adapters/go')}")

    def supports(self, steps: tuple[Operation, ...]) -> tuple[bool, str]:
        kinds = {s.kind for s in steps}
        if "join_group_held" in kinds:
            return False, JOIN_GROUP_HELD_NA
        if "position" in kinds:
            return False, self.no_position
        if "close" in kinds:
            return False, self.no_close
        return super().supports(steps)

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        config = {**env.config, "adapter.scale": env.scale}
        if steps and all(s.kind == "configure_producer" for s in steps):
            # no network, nothing timed: the client judges the settings at their full length (franz-go
            # refuses a RecordDeliveryTimeout under 1 s, which a scaled 20 s would fall below)
            config = {**_unscaled(env.config, env.scale), "adapter.scale": 1.0}
        go_env = replace(env, config=config)
        return super().run_blocking(tuple(_scaled_step(s, env.scale) for s in steps), go_env)


class FranzGoAdapter(GoAdapter):
    """franz-go v1.22 (kgo for producing and consuming, kadm for offsets and topics).

    Contract parameters and the franz-go settings that stand for them:

        contract parameter       franz-go
        request.timeout.ms       kgo.RequestTimeoutOverhead: the read deadline of a request; for a
                                 request with a timeout field (Produce, Fetch's max wait) it is
                                 added to that field. kgo.ProduceRequestTimeout: Produce's
                                 timeout_ms (as Java's Sender sends request.timeout.ms). So a
                                 Produce is abandoned at timeout_ms + overhead = 2 x request.timeout.ms
        delivery.timeout.ms      kgo.RecordDeliveryTimeout (not enforced while failing the record
                                 would break the idempotent sequence: a request in flight)
        max.block.ms             the context given to Client.Produce (set only when the scenario
                                 sets max.block.ms): it fails a record not yet written in a request
        default.api.timeout.ms   kgo.RetryTimeout (bounds the retries of a call given no deadline)
        API deadline             a context.WithTimeout given to the kadm call / PollFetches
        socket.connection.setup  kgo.DialTimeout
        acks, enable.idempotence kgo.RequiredAcks, kgo.DisableIdempotentWrite
        retries, linger.ms       kgo.RecordRetries, kgo.ProducerLinger
        fetch.max.wait.ms        kgo.FetchMaxWait
        (none: own default)      kadm.Client.SetTimeoutMillis: the TimeoutMillis kadm puts in ListOffsets
                                 v10+ and admin requests (15 s, scaled like franz-go's other timers)

    Operations:

        produce             Client.Produce + promise, awaited per record; value: the last offset
        produce_pipelined   count Produce calls (gap_s apart), then every promise
        configure_producer  kgo.NewClient(producer options), given the scenario's unscaled values (no
                            network, nothing timed; kgo refuses a RecordDeliveryTimeout under 1 s)
        poll                kgo.ConsumePartitions + PollFetches(ctx): the number of records
        committed           kadm.Client.FetchOffsets(ctx, group): the offset or None
        end_offsets         kadm.Client.ListEndOffsets(ctx, topic): {"partition": offset}
        beginning_offsets   kadm.Client.ListStartOffsets(ctx, topic)
        offsets_for_times   kadm.Client.ListOffsetsAfterMilli(ctx, ms, topic)
        list_topics         kadm.Client.ListTopics(ctx): the sorted names
        partitions_for      kadm.Client.ListTopics(ctx, topic): the partition ids
        commit_sync         kadm.Client.CommitOffsets(ctx, group, offsets)
        admin_list_topics   kadm.Client.ListTopics(ctx), repeat times on one client

    N/A: position (franz-go has no call for it: the consumer resolves its start offset in the
    background), close (Client.Close takes no deadline), join_group_held (py_common's reason).
    """

    name = "franz-go"
    sasl = True        # security.protocol SASL_PLAINTEXT, sasl.* -> kgo.SASL (options.go)
    program = "franzgo-adapter"
    warm_up_calls = frozenset({"committed", "end_offsets", "beginning_offsets", "offsets_for_times", "list_topics",
                               "partitions_for", "commit_sync"})   # adminStep (offsets.go)
    no_position = ("franz-go has no position(): a kgo consumer resolves its fetch offset in the background "
                   "(ListOffsets inside the client), with no call an application could give a deadline")
    no_close = "franz-go's Client.Close() takes no deadline (it cancels fetches in flight at once)"


# sarama's calls that take no deadline: a scenario that gives the call one is N/A
SARAMA_NO_DEADLINE = frozenset({"committed", "end_offsets", "beginning_offsets", "offsets_for_times", "list_topics",
                                "partitions_for", "commit_sync"})


# scenarios whose contract is a setting sarama does not have (their steps are a produce like
# others': the scenario, not its steps, says which)
# The settings sarama has no counterpart for: a contract holding a client to one is N/A for sarama
# (Contract.setting), the scenario's other contracts still judge it. Where such a setting is the
# scenario's whole point, SARAMA_INEXPRESSIBLE takes out the scenario.
SARAMA_LACKS = MappingProxyType({
    "delivery.timeout.ms": ("sarama has no delivery.timeout.ms: a record fails after Producer.Retry.Max retries (3), "
                            "each bounded by Net.ReadTimeout (or Net.DialTimeout while connecting), "
                            "Producer.Retry.Backoff apart, so when it fails depends on how many attempts fit"),
    "max.block.ms": "sarama has no max.block.ms: Metadata.Retry.Max refreshes, Metadata.Retry.Backoff apart, bound the wait",
    "default.api.timeout.ms": "sarama has no default.api.timeout.ms: its calls take no deadline",
})

SARAMA_INEXPRESSIBLE = {
    "kip91.delivery-timeout-in-flight": ("sarama has no delivery.timeout.ms: a record fails after Producer.Retry.Max "
                                         "retries (3), each bounded by Net.ReadTimeout (at Kafka's defaults that is "
                                         "4 x 30 s = 120 s, the same figure by coincidence)"),
    "kip91.max-block-missing-topic": ("sarama has no max.block.ms: SendMessage gives up on a missing topic after "
                                      "Metadata.Retry.Max (3) refreshes, Metadata.Retry.Backoff apart"),
}


class SaramaAdapter(GoAdapter):
    """IBM sarama v1.61 (Client, SyncProducer, Consumer, ClusterAdmin; protocol version
    sarama.DefaultVersion).

    Contract parameters and the sarama settings that stand for them:

        contract parameter       sarama
        request.timeout.ms       Net.ReadTimeout and Net.WriteTimeout (each request's read and
                                 write, every API alike, Fetch included) and Producer.Timeout
                                 (Produce's timeout_ms)
        delivery.timeout.ms      none: a record fails after Producer.Retry.Max retries (3), each
                                 bounded by Net.ReadTimeout, Producer.Retry.Backoff apart
        max.block.ms             none: Metadata.Retry.Max x Metadata.Retry.Backoff bound the wait
                                 for a topic's metadata
        default.api.timeout.ms   none: sarama's calls take no deadline
        API deadline             none, except poll: a select on PartitionConsumer.Messages() with a
                                 timer, the way a sarama application waits
        admin deadline           none per call (Admin.Timeout is CreateTopics' timeout_ms)
        socket.connection.setup  Net.DialTimeout
        acks, enable.idempotence Producer.RequiredAcks, Producer.Idempotent (Net.MaxOpenRequests=1)
        retries, retry.backoff   Producer.Retry.Max, Producer/Metadata/Admin.Retry.Backoff
        fetch.max.wait.ms        Consumer.MaxWaitTime

    Operations:

        produce             SyncProducer.SendMessage per record; value: the last offset
        produce_pipelined   AsyncProducer.Input() count times (gap_s apart), then Successes/Errors
        configure_producer  sarama.Config.Validate (what NewSyncProducer runs)
        poll                Consumer.ConsumePartition, Messages() until the step's deadline
        committed           ClusterAdmin.ListConsumerGroupOffsets: the offset or None
        end_offsets,
        beginning_offsets,
        offsets_for_times   Client.GetOffset(topic, partition, OffsetNewest / OffsetOldest / ms)
        list_topics         Client.RefreshMetadata() then Client.Topics()
        partitions_for      Client.RefreshMetadata(topic) then Client.Partitions(topic)
        commit_sync         Client.Coordinator(group) then Broker.CommitOffset (generation -1)
        admin_list_topics   ClusterAdmin.ListTopics() (Metadata, then DescribeConfigs), repeat times;
                            the step's deadline is not passed (sarama takes none): the scenarios
                            judge the listing and the broker's side, not that deadline

    N/A: position (no such call), close (Consumer.Close takes no deadline), every call of
    SARAMA_NO_DEADLINE (sarama cannot give one a deadline, and has no default.api.timeout.ms),
    configure_producer (no delivery.timeout.ms to validate), the scenarios of SARAMA_INEXPRESSIBLE
    (delivery.timeout.ms, max.block.ms), join_group_held (py_common's reason). The programs still
    run every operation (tests/realclients/test_go_clients.py calls them without a deadline).
    Every sarama call is made on a client created before the timed call (sarama.NewClient loads
    the cluster's metadata); a client that cannot be created is the outcome.
    """

    name = "sarama"
    program = "sarama-adapter"
    lacks = SARAMA_LACKS
    sasl = True        # security.protocol SASL_PLAINTEXT, sasl.* -> Net.SASL (sasl.go; SCRAM through franz-go's)
    no_position = "sarama has no position(): a PartitionConsumer resolves its offset inside ConsumePartition"
    no_close = "sarama's Consumer.Close() takes no deadline"

    def supports(self, steps: tuple[Operation, ...]) -> tuple[bool, str]:
        calls = sorted({s.kind for s in steps if s.kind in SARAMA_NO_DEADLINE})
        if calls:
            return False, (f"sarama's {', '.join(calls)} takes no deadline (no context, no timeout argument) and "
                           "sarama has no default.api.timeout.ms: only Net.ReadTimeout and its retry counts bound it")
        if any(s.kind == "configure_producer" for s in steps):
            return False, "sarama has no delivery.timeout.ms, so no rule tying it to linger.ms and request.timeout.ms"
        return super().supports(steps)

    def supports_scenario(self, scenario: Scenario) -> tuple[bool, str]:
        if scenario.id in SARAMA_INEXPRESSIBLE:
            return False, SARAMA_INEXPRESSIBLE[scenario.id]
        return super().supports_scenario(scenario)


def go_adapters() -> list[GoAdapter]:
    return [FranzGoAdapter(), SaramaAdapter()]
