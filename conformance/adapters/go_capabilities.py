"""What franz-go and sarama can and cannot do (conformance/client_capabilities.py), with the reasons the Go
adapters (conformance/adapters/go_clients.py) give for their N/As: each cites the client's source
at its pinned version (conformance/adapters/go/go.mod), as file: function."""

from __future__ import annotations

from types import MappingProxyType

from conformance.client_capabilities import ClientCapabilities, Lack, Pin, fixed_setup_timeout, lacks_rebootstrap

GO_MOD = "conformance/adapters/go/go.mod"

# Scenarios whose whole point is a client setting franz-go v1.22.2 does not have.
FRANZ_INEXPRESSIBLE = {
    "kip848.late-poll-leaves-and-rejoins": (
        "franz-go has no max.poll.interval.ms: kgo keeps no poll timer (no such option in pkg/kgo/config.go), its "
        "KIP-848 heartbeats run in the background whether or not the application polls (consumer_group_848.go "
        "manage848), so a member that stops polling never leaves; kgo.RebalanceTimeout, which the adapter maps "
        "max.poll.interval.ms to, is only the RebalanceTimeoutMillis it sends in ConsumerGroupHeartbeat (run by "
        "hand: heartbeats at epoch 1 every 167 ms through the 3 s stall, no leave until the client was closed, "
        "the partitions still owned when polled again)"),
}


# sarama's calls that take no deadline: a scenario that gives the call one is N/A. Their
# signatures in sarama v1.61.1 take no context and no timeout: client.go Client.GetOffset(topic,
# partitionID, time), Client.RefreshMetadata(topics...), Client.Coordinator(group); admin.go
# ClusterAdmin.ListConsumerGroupOffsets(group, topicPartitions); broker.go Broker.CommitOffset(request).
SARAMA_NO_DEADLINE = frozenset({"committed", "end_offsets", "beginning_offsets", "offsets_for_times", "list_topics",
                                "partitions_for", "commit_sync"})

# Where the sarama reasons below cite code, it is sarama v1.61.1's (file: function).
SARAMA_RETRIES = ("a record fails once it has been retried Producer.Retry.Max times (3; async_producer.go "
                  "retryMessage and retryBatch: `msg.retries >= p.conf.Producer.Retry.Max`), each attempt bounded "
                  "by Net.ReadTimeout (broker.go readFull: SetReadDeadline(now + Net.ReadTimeout)) or Net.DialTimeout "
                  "while connecting, Producer.Retry.Backoff apart")

# The settings sarama has no counterpart for: a contract holding a client to one is N/A for sarama
# (Contract.setting), the scenario's other contracts still judge it (SARAMA_CAPABILITIES says what
# stands in for each).
SARAMA_LACKS = MappingProxyType({
    "delivery.timeout.ms": (f"sarama has no delivery.timeout.ms (no such field in config.go's Config.Producer): "
                            f"{SARAMA_RETRIES}, so when it fails depends on how many attempts fit"),
    "max.block.ms": ("sarama has no max.block.ms (no such field in config.go): a send waiting for a topic's metadata "
                     "is bounded by Metadata.Retry.Max (3) refreshes, Metadata.Retry.Backoff apart (client.go "
                     "tryRefreshMetadata), and its transactional calls by Producer.Transaction.Retry.Max (50) attempts "
                     "(transaction_manager.go initProducerId, endTxn); Metadata.Timeout, off by default, bounds one "
                     "metadata refresh, not a send"),
    "default.api.timeout.ms": ("sarama has no default.api.timeout.ms: its calls take no deadline (client.go "
                               "Client.GetOffset, admin.go ClusterAdmin.ListConsumerGroupOffsets take no context "
                               "or timeout)"),
})
# what stands in for them, and where nothing does
SARAMA_DELIVERY_STAND_IN = (
    "Producer.Retry.Max retries, each bounded by Net.ReadTimeout (the scenario's request.timeout.ms), stand in: the "
    "contract timing the record against delivery.timeout.ms is N/A, the others (how the record ends, what reaches "
    "the log) judge sarama")
SARAMA_BLOCK_STAND_IN = (
    "Metadata.Retry.Max refreshes stand in for a send waiting for metadata, and Producer.Transaction.Retry.Max "
    "attempts of InitProducerId and EndTxn, each bounded by Net.ReadTimeout, for the transactional calls "
    "(NewSyncProducer, which sends InitProducerId, and CommitTxn, which take no deadline): the contract timing the "
    "call against max.block.ms is N/A, the others (how the call ends, the commit markers written) judge sarama")
SARAMA_NO_CONFIG_RULE = ("sarama has no delivery.timeout.ms (config.go's Config.Producer has none), so Config.Validate "
                         "has no rule tying it to linger.ms and request.timeout.ms: the scenario's two contracts (a "
                         "ConfigException naming the three settings) are that rule")

# sarama v1.61.1 has no KIP-848 consumer: request.go allocateBody lists "68: ConsumerGroupHeartbeatRequest"
# only as a comment (no such request type), and its ConsumerGroup joins with JoinGroup/SyncGroup
# (consumer_group.go newSession), the classic protocol.
SARAMA_NO_KIP848 = ("sarama has no KIP-848 consumer group protocol: v1.61.1 has no ConsumerGroupHeartbeat request "
                    "(request.go allocateBody names API key 68 only in a comment) and its ConsumerGroup joins with "
                    "JoinGroup/SyncGroup (consumer_group.go newSession)")

FRANZ_NO_POSITION = ("franz-go has no position(): a kgo consumer resolves the fetch offset of an assigned partition "
                     "in the background (its own ListOffsets, pkg/kgo/consumer.go), and no kgo call returns it given "
                     "a deadline")
FRANZ_NO_CLOSE = ("franz-go's Client.Close() takes no deadline (pkg/kgo/client.go v1.22.2: `func (cl *Client) Close()`, "
                  "which closes with the client's own context, `cl.close(cl.ctx)`); for a consumer outside a group it "
                  "invalidates the assignment, cancelling fetches in flight at once. LeaveGroupContext(ctx), the only "
                  "close-time call with a context, is a no-op outside a group")
SARAMA_NO_POSITION = ("sarama has no position(): a PartitionConsumer resolves its start offset inside "
                      "Consumer.ConsumePartition (consumer.go chooseStartingOffset), and no call returns the fetch position")
SARAMA_NO_CLOSE = ("sarama's Consumer.Close() takes no deadline (consumer.go: `func (c *consumer) Close() error`, "
                   "which closes its client; PartitionConsumer.Close() likewise)")


# -- the declarations ------------------------------------------------------------------------------

_GO_ABANDONED = ("a Go application gives a call that takes no context a deadline by waiting for it in a goroutine "
                 "until then and abandoning it (the adapter's lineproto.WithinDeadline; the client is closed as the "
                 "step ends): the matrix judges how the call ends and what the client sends meanwhile")
_FRANZ_JUDGED_BLOCK = ("the adapter gives the scenario's max.block.ms to the contexts of Client.Produce, ProducerID and "
                       "EndTransaction (adapters/go/cmd/franzgo-adapter)")
FRANZ_CAPABILITIES = ClientCapabilities(
    client="franz-go", pin=Pin(GO_MOD, "github.com/twmb/franz-go"),
    source="https://github.com/twmb/franz-go/blob/{version}/{path}",
    has=("delivery.timeout.ms", "linger.ms", "calls on one client", "transactions",
         "poll(timeout)", "poll(0)", "consumer calls", "committed(timeout)", "offsets(timeout)", "list_topics(timeout)",
         "commit_sync(timeout)", "default.api.timeout.ms", "KIP-848", "create_topics(timeout)",
         "delete_records(timeout)", "SASL", "socket.connection.setup.timeout.ms",
         "rebootstrap when brokers are gone", "REBOOTSTRAP_REQUIRED", "share groups"),
    lacks=MappingProxyType({
        "max.block.ms": Lack(
            "kgo has no max.block.ms option (pkg/kgo/config.go): canceling the context given to Client.Produce fails "
            "a record not yet written in a request (pkg/kgo/producer.go Client.Produce), and ProducerID and "
            "EndTransaction take a context of their own", "pkg/kgo/producer.go", judged=_FRANZ_JUDGED_BLOCK),
        "position(timeout)": Lack(FRANZ_NO_POSITION, "pkg/kgo/consumer.go"),
        "close(timeout)": Lack(FRANZ_NO_CLOSE, "pkg/kgo/client.go", judged=_GO_ABANDONED),
        "max.poll.interval.ms": Lack(FRANZ_INEXPRESSIBLE["kip848.late-poll-leaves-and-rejoins"], "pkg/kgo/config.go"),
        **lacks_rebootstrap(
            "kgo has no metadata.recovery.strategy and no rebootstrap trigger (pkg/kgo/config.go): it cannot be told "
            "to keep the brokers it knows, and nothing counts how long its metadata has been starved. What it has "
            "instead: it sends a request to a seed broker now and then whatever it has discovered (see "
            "OnRebootstrapRequired, pkg/kgo/config.go), and a Metadata answer with no brokers wipes every broker it "
            "discovered, falling back to its seeds at once (Client.updateBrokers, pkg/kgo/client.go)",
            "pkg/kgo/client.go", names=("metadata.recovery.rebootstrap.trigger.ms", "metadata.recovery.strategy")),
        "socket.connection.setup.timeout.max.ms": fixed_setup_timeout("kgo", "DialTimeout (a net.Dialer's Timeout: pkg/kgo/config.go, "
                                                  "pkg/kgo/client.go)", "pkg/kgo/config.go"),
    }),
    notes=MappingProxyType({"share groups": "kgo.ShareGroup (pkg/kgo/consumer_share.go): Record.Ack(AckAccept, "
                                            "AckRelease, AckReject, AckRenew), FlushAcks(ctx) as commitSync(timeout), "
                                            "LeaveGroupContext(ctx) then Close() as close(timeout)",
                            "delivery.timeout.ms": "kgo.RecordDeliveryTimeout, checked only when kgo builds its next "
                                                   "Produce request (pkg/kgo/config.go: \"only evaluated before writing a "
                                                   "request or after a produce response\"): with the leader unreachable "
                                                   "a record fails when the attempt in flight ends, up to two DialTimeouts "
                                                   "and a backoff late, or four when a Metadata request to that broker was "
                                                   "queued ahead of it (docs/findings.md)",
                            "linger.ms": "kgo.ProducerLinger",
                            "default.api.timeout.ms": "kgo.RetryTimeout",
                            "KIP-848": "kgo.ServerSideBalancer() opts a group consumer in",
                            "socket.connection.setup.timeout.ms": "kgo.DialTimeout",
                            "committed(timeout)": "the context given to kadm.Client.FetchOffsets",
                            "REBOOTSTRAP_REQUIRED": "kgo.OnRebootstrapRequired, which the adapter sets (returning the "
                                                    "seeds) when the scenario names metadata.recovery.strategy="
                                                    "rebootstrap: without it kgo takes the answer as a failed metadata load, and REBOOTSTRAP_REQUIRED being not retriable (pkg/kerr/kerr.go) it fails the records waiting on it (recBuf.bumpRepeatedLoadErr, pkg/kgo/sink.go)",
                            "rebootstrap when brokers are gone": "kgo asks a seed broker now and then, whatever it "
                                                                 "has discovered (no setting)"}),
)

_SARAMA_NO_DEADLINE = ("takes no deadline (no context, no timeout argument) and sarama has no default.api.timeout.ms: "
                       "only Net.ReadTimeout and its retry counts bound it")
SARAMA_CAPABILITIES = ClientCapabilities(
    client="sarama", pin=Pin(GO_MOD, "github.com/IBM/sarama"), source="https://github.com/IBM/sarama/blob/{version}/{path}",
    has=("linger.ms", "calls on one client", "transactions", "poll(timeout)", "poll(0)",
         "consumer calls", "create_topics(timeout)", "delete_records(timeout)", "SASL",
         "socket.connection.setup.timeout.ms", "rebootstrap when brokers are gone"),
    lacks=MappingProxyType({
        "delivery.timeout.ms": Lack(SARAMA_LACKS["delivery.timeout.ms"], "config.go", judged=SARAMA_DELIVERY_STAND_IN,
                                    not_in=(("kip91.config-validation", SARAMA_NO_CONFIG_RULE),)),
        "max.block.ms": Lack(SARAMA_LACKS["max.block.ms"], "config.go", judged=SARAMA_BLOCK_STAND_IN),
        "committed(timeout)": Lack(f"sarama's ClusterAdmin.ListConsumerGroupOffsets (admin.go) {_SARAMA_NO_DEADLINE}",
                                   "admin.go", judged=_GO_ABANDONED),
        "position(timeout)": Lack(SARAMA_NO_POSITION, "consumer.go"),
        "offsets(timeout)": Lack(f"sarama's Client.GetOffset (client.go) {_SARAMA_NO_DEADLINE}", "client.go",
                                 judged=_GO_ABANDONED),
        "list_topics(timeout)": Lack(f"sarama's Client.RefreshMetadata (client.go) {_SARAMA_NO_DEADLINE}", "client.go",
                                     judged=_GO_ABANDONED),
        "commit_sync(timeout)": Lack(f"sarama's Client.Coordinator (client.go) and Broker.CommitOffset (broker.go) each "
                                     f"{_SARAMA_NO_DEADLINE}", "broker.go", judged=_GO_ABANDONED),
        "close(timeout)": Lack(SARAMA_NO_CLOSE, "consumer.go", judged=_GO_ABANDONED),
        "default.api.timeout.ms": Lack(SARAMA_LACKS["default.api.timeout.ms"], "client.go",
                                       judged="the call without a deadline, bounded as sarama bounds it (Net.ReadTimeout "
                                              "per request, its retry counts)"),
        "KIP-848": Lack(SARAMA_NO_KIP848, "request.go"),
        "max.poll.interval.ms": Lack(
            "sarama has no max.poll.interval.ms (no such field in config.go): its ConsumerGroup hands partitions to "
            "ConsumeClaim goroutines and keeps no poll timer; Consumer.Group.Rebalance.Timeout, which the adapter "
            "maps max.poll.interval.ms to, is JoinGroup's rebalance timeout", "config.go"),
        **lacks_rebootstrap(
            "sarama has no metadata recovery strategy (no such field in config.go) and does not know "
            "REBOOTSTRAP_REQUIRED (errors.go): it refreshes metadata from the brokers it knows, and asks its seed "
            "brokers again only once every discovered broker failed and was deregistered (client.go: "
            "LeastLoadedBroker, resurrectDeadBrokers)", "client.go",
            names=("REBOOTSTRAP_REQUIRED", "metadata.recovery.rebootstrap.trigger.ms", "metadata.recovery.strategy")),
        "share groups": Lack("sarama has no share consumer: allocateBody knows no ShareGroupHeartbeat or ShareFetch "
                             "(request.go)", "request.go"),
        "socket.connection.setup.timeout.max.ms": fixed_setup_timeout("sarama", "Net.DialTimeout (a net.Dialer's Timeout: config.go)", "config.go"),
    }),
    notes=MappingProxyType({"linger.ms": "Producer.Flush.Frequency", "socket.connection.setup.timeout.ms": "Net.DialTimeout",
                            "create_topics(timeout)": "Admin.Timeout, the request's timeout_ms (no per-call deadline)",
                            "delete_records(timeout)": "Admin.Timeout, the request's timeout_ms (no per-call deadline)",
                            "poll(timeout)": "a select on PartitionConsumer.Messages() with a timer"}),
)
