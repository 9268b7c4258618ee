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
    ProducerFencedException           kerr.ProducerFenced (90); in a            KError 90 (ErrProducerFenced); in a
                                      transactional call also                   transactional call also KError 47
                                      kerr.InvalidProducerEpoch (47), as        (ErrInvalidProducerEpoch), as Java's
                                      Java's TransactionManager.EndTxnHandler   TransactionManager.EndTxnHandler
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

from conformance.adapters.base import MS_KEYS_SUFFIX, RunEnv
from conformance.adapters.go_capabilities import (
    FRANZ_CAPABILITIES,
    FRANZ_INEXPRESSIBLE,
    FRANZ_NO_POSITION,
    SARAMA_CAPABILITIES,
    SARAMA_LACKS,
    SARAMA_NO_CONFIG_RULE,
    SARAMA_NO_KIP848,
    SARAMA_NO_POSITION,
)
from conformance.adapters.line_protocol import LineProtocolAdapter
from conformance.adapters.py_common import JOIN_GROUP_HELD_NA
from conformance.adapters.share_stories import SHARE_OPERATIONS, share_args
from conformance.cache_dir import cache_dir, install_hint
from conformance.model import Operation, Outcome, Scenario

GO_OPERATIONS = frozenset({
    "produce", "produce_pipelined", "configure_producer", "poll", "committed", "end_offsets",
    "beginning_offsets", "offsets_for_times", "list_topics", "partitions_for", "commit_sync",
    "admin_list_topics",
})
# franz-go's transactional and admin steps (Sarama's are SARAMA_OPERATIONS)
KIP848_OPERATIONS = frozenset({"kip848_heartbeats", "kip848_late_poll", "kip848_member_crash", "kip848_slow_revoke",
                               "kip848_stale_commit", "kip848_coordinator_dies"})
FRANZ_OPERATIONS = GO_OPERATIONS | KIP848_OPERATIONS | SHARE_OPERATIONS | {
    "close", "transaction", "txn_zombie", "txn_abort_then_commit", "read_committed_behind_open_txn", "txn_error_probe",
    "create_topics", "delete_records", "join_group_held"}
SARAMA_OPERATIONS = GO_OPERATIONS | {"close", "transaction", "txn_zombie", "txn_abort_then_commit", "read_committed_behind_open_txn",
                                     "txn_error_probe", "create_topics", "delete_records", "join_group_held"}
# args in unscaled seconds (pauses): the program sleeps real seconds
SCALED_ARGS_S = ("pause_s", "gap_s", "open_s", "clear_s")
# args in Kafka-time ms (the kip848 steps): the program sleeps real ms
SCALED_ARGS_MS = ("run_ms", "stall_ms", "revoke_ms", "every_ms")
MIN_GAP_S = 0.05   # produce_pipelined: the first batch must leave before the second record is sent


def _scaled_step(step: Operation, scale: float) -> Operation:
    if step.kind in SHARE_OPERATIONS:   # Kafka-time ms and the group's *.ms configs, waited in real ms
        return share_args(step, scale)
    args = dict(step.args)
    for key in SCALED_ARGS_S:
        if key in args:
            args[key] = args[key] / scale
    for key in SCALED_ARGS_MS:
        if key in args:
            args[key] = args[key] / scale
    if step.kind == "produce_pipelined":
        args["gap_s"] = max(args.get("gap_s", 0.0) / scale, MIN_GAP_S)
    return replace(step, args=args)


def _unscaled(config: dict, scale: float) -> dict:
    """The scenario's own values of a scaled config (conformance.cluster_setup.scale_config's inverse)."""
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
        if "join_group_held" in kinds and "join_group_held" not in self.operations:
            return False, JOIN_GROUP_HELD_NA
        if "position" in kinds:
            return False, self.no_position
        if "close" in kinds and self.no_close:
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
                                 sets max.block.ms): it fails a record not yet written in a request;
                                 the context of Client.ProducerID and Client.EndTransaction
        default.api.timeout.ms   kgo.RetryTimeout (bounds the retries of a call given no deadline)
        transaction.timeout.ms   kgo.TransactionTimeout
        max.poll.interval.ms     kgo.RebalanceTimeout (the rebalance timeout only: kgo has no poll timer)
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
        create_topics       kadm.Client.CreateTopics(ctx, ...), the step's deadline both the context and
                            CreateTopics' TimeoutMillis (kadm.Client.SetTimeoutMillis), as Java's
                            CreateTopicsOptions.timeoutMs; franz-go's own read deadline is longer
                            (RequestTimeoutOverhead + TimeoutMillis), so the context ends the call
        delete_records      kadm.Client.DeleteRecords(ctx, ...), likewise; value: the low watermark
        transaction         kgo.TransactionalID(client id + "-tx"): Client.ProducerID(ctx) for
                            initTransactions (InitProducerId), BeginTransaction, ProduceSync,
                            EndTransaction(ctx, TryCommit); max.block.ms, when set, is the context of
                            ProducerID (time_init) and EndTransaction (txn.go)
        txn_zombie          two clients with one transactional id; the first's EndTransaction is timed
        read_committed_behind_open_txn
                            kgo.FetchIsolationLevel(kgo.ReadCommitted()) behind an open transaction
        kip848_*            group consumers opted into KIP-848 with kgo.ServerSideBalancer() (franz-go
                            v1.22 does not opt in by itself: config.go ServerSideBalancer, and
                            consumer_group_848.go should848 also needs the broker's
                            ConsumerGroupHeartbeat v1); members tracked by their OnPartitions*
                            callbacks; kip848_member_crash's first member is this program run as
                            `franzgo-adapter member ...`, killed (kip848.go)
        join_group_held     a classic-protocol member (client id SILENT_MEMBER) joins and is polled no
                            more; timed: a second member's start until it owns partitions (joingroup.go)
        share_*             the share stories (share_stories.py, ShareSteps.java) with kgo's share
                            consumer, kgo.ShareGroup (share.go): Record.Ack(kgo.AckAccept, AckRelease,
                            AckReject, AckRenew); commitSync(timeout) is Client.FlushAcks(ctx), its
                            per-partition results kgo.ShareAckCallback's; close(timeout) is
                            Client.LeaveGroupContext(ctx) (the final-epoch ShareAcknowledge, then the
                            leave) and Close(). kgo's next poll accepts a renewed record, so the renew
                            story's holder renews without polling

    Errors (errorName, main.go; txnErrorName, txn.go): Kafka's Java name where kerr's code has one
    (lineproto.JavaNames: PRODUCER_FENCED -> ProducerFencedException), INVALID_PRODUCER_EPOCH from a
    transactional call -> ProducerFencedException (as Java's TransactionManager.EndTxnHandler treats
    it), context.DeadlineExceeded and socket deadlines -> TimeoutException.

    N/A: position, and the scenarios of FRANZ_INEXPRESSIBLE; every reason cites franz-go v1.22.2's
    source.
    """

    name = "franz-go"
    operations = FRANZ_OPERATIONS
    sasl = True        # security.protocol SASL_PLAINTEXT, sasl.* -> kgo.SASL (options.go)
    program = "franzgo-adapter"
    capabilities = FRANZ_CAPABILITIES
    lacks = MappingProxyType({"socket.connection.setup.timeout.max.ms": FRANZ_CAPABILITIES.lacks["socket.connection.setup.timeout.max.ms"].reason})
    warm_up_calls = frozenset({"committed", "end_offsets", "beginning_offsets", "offsets_for_times", "list_topics",
                               "partitions_for", "commit_sync"})   # adminStep (offsets.go)
    no_position = FRANZ_NO_POSITION
    no_close = ""      # Client.Close() takes no context: the step's deadline is the application's (lineproto.WithinDeadline)

    def __init__(self, broker_has_kip848: bool | None = None) -> None:
        super().__init__()
        self.broker_has_kip848 = broker_has_kip848

    def supports(self, steps: tuple[Operation, ...]) -> tuple[bool, str]:
        group_ops = sorted({s.kind for s in steps} & KIP848_OPERATIONS)
        if group_ops:
            from conformance.adapters.java_client import emulator_has_kip848

            has_848 = self.broker_has_kip848 if self.broker_has_kip848 is not None else emulator_has_kip848()
            if not has_848:
                return False, (f"{', '.join(group_ops)} needs KIP-848's ConsumerGroupHeartbeat v1, which this broker "
                               "does not serve (franz-go would fall back to the classic protocol: should848)")
        return super().supports(steps)

    def supports_scenario(self, scenario: Scenario) -> tuple[bool, str]:
        if scenario.id in FRANZ_INEXPRESSIBLE:
            return False, FRANZ_INEXPRESSIBLE[scenario.id]
        return super().supports_scenario(scenario)


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
                                 for a topic's metadata, Producer.Transaction.Retry.Max attempts a
                                 transactional call
        transaction.timeout.ms   Producer.Transaction.Timeout
        default.api.timeout.ms   none: sarama's calls take no deadline
        API deadline             none, except poll: a select on PartitionConsumer.Messages() with a
                                 timer, the way a sarama application waits
        admin deadline           none per call: the step's deadline is Admin.Timeout, the timeout_ms of
                                 CreateTopics and DeleteRecords (the broker's deadline)
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
        create_topics       ClusterAdmin.CreateTopic; the step's deadline is Admin.Timeout, the
                            request's timeout_ms (sarama's only admin deadline), and Net.ReadTimeout
                            (request.timeout.ms) stays longer, so the broker's answer comes back
        delete_records      ClusterAdmin.DeleteRecords, likewise
        transaction         Producer.Transaction.ID (client id + "-tx"), Idempotent: the SyncProducer's
                            construction (InitProducerId), BeginTxn, SendMessage, CommitTxn (txn.go);
                            retry_commit: CommitTxn again after one that timed out
        txn_zombie          two producers with one Transaction.ID; the first's CommitTxn is timed
        read_committed_behind_open_txn
                            Consumer.IsolationLevel = sarama.ReadCommitted behind an open transaction
        join_group_held     two ConsumerGroups of one group, the first with client id SILENT_MEMBER;
                            the second's Consume (called again after a failed join) timed until a
                            session holds partitions (group.go)

    The scenarios about delivery.timeout.ms and max.block.ms run with sarama's retry budgets
    standing in (SARAMA_CAPABILITIES): their timing contracts are N/A (Adapter.lacks), the others
    judge sarama. N/A: position, configure_producer (no delivery.timeout.ms to validate:
    SARAMA_NO_CONFIG_RULE), the kip848_* steps (SARAMA_NO_KIP848); every reason cites sarama
    v1.61.1's source. A call that takes no deadline (committed, the offsets, list_topics, commit_sync, close)
    is given the step's as a Go application would: waited for in a goroutine until then and abandoned
    (lineproto.WithinDeadline). The programs still run every operation but the KIP-848 ones
    (tests/realclients/test_go_clients.py calls them without a deadline).
    Every sarama call is made on a client created before the timed call (sarama.NewClient loads
    the cluster's metadata); a client that cannot be created is the outcome.
    """

    name = "sarama"
    program = "sarama-adapter"
    operations = SARAMA_OPERATIONS
    lacks = MappingProxyType({**SARAMA_LACKS, "socket.connection.setup.timeout.max.ms": SARAMA_CAPABILITIES.lacks["socket.connection.setup.timeout.max.ms"].reason})
    capabilities = SARAMA_CAPABILITIES
    sasl = True        # security.protocol SASL_PLAINTEXT, sasl.* -> Net.SASL (sasl.go; SCRAM through franz-go's)
    no_position = SARAMA_NO_POSITION
    no_close = ""      # Consumer.Close() takes no deadline: the step's is the application's (lineproto.WithinDeadline)
    warm_up_calls = frozenset({"committed", "end_offsets", "beginning_offsets", "offsets_for_times", "list_topics",
                               "partitions_for", "commit_sync"})   # clientStep (ops.go): the call once, untimed, first

    def supports(self, steps: tuple[Operation, ...]) -> tuple[bool, str]:
        if any(s.kind.startswith("kip848_") for s in steps):
            return False, SARAMA_NO_KIP848
        if any(s.kind == "configure_producer" for s in steps):
            return False, SARAMA_NO_CONFIG_RULE
        return super().supports(steps)


def go_adapters() -> list[GoAdapter]:
    return [FranzGoAdapter(), SaramaAdapter()]
