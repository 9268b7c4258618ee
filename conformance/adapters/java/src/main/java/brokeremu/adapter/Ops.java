package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The operations of conformance/adapters/base.py, each on a client of its own built from the
 * run's config, each timed around the client's own call. {@code timeoutMs} is the call's
 * Duration; null calls the overload without one (the client's default.api.timeout.ms).
 */
final class Ops {
    static final List<String> OPERATIONS = List.of("produce", "poll", "committed", "position", "end_offsets",
            "beginning_offsets", "offsets_for_times", "list_topics", "partitions_for", "commit_sync", "close",
            "admin_list_topics", "configure_producer", "produce_pipelined", "transaction", "txn_zombie",
            "read_committed_behind_open_txn", "txn_abort_then_commit", "txn_error_probe", "kip848_heartbeats", "kip848_late_poll",
            "kip848_member_crash", "kip848_slow_revoke", "kip848_stale_commit", "kip848_coordinator_dies",
            "create_topics", "delete_records", JoinGroupHeld.KIND);

    static final Duration CLOSE_AFTER_STEP = Duration.ofSeconds(1);

    private Ops() {
    }

    interface ConsumerCall {
        JsonNode call(KafkaConsumer<byte[], byte[]> c, TopicPartition tp, Duration d) throws Exception;
    }

    static ObjectNode perform(Run run, String kind, JsonNode args, Long timeoutMs) throws Exception {
        Duration d = timeoutMs == null ? null : Duration.ofMillis(timeoutMs);
        return switch (kind) {
            case "produce" -> produce(run, args);
            case "produce_pipelined" -> producePipelined(run, args);
            case "transaction" -> Txn.transaction(run, args);
            case "txn_zombie" -> Txn.zombie(run, args);
            case "txn_abort_then_commit" -> Txn.abortThenCommit(run, args);
            case "txn_error_probe" -> TxnProbe.probe(run, args);
            case "kip848_heartbeats" -> Kip848.heartbeats(run, args, timeoutMs);
            case "kip848_late_poll" -> Kip848.latePoll(run, args, timeoutMs);
            case "kip848_member_crash" -> Kip848.memberCrash(run, args, timeoutMs);
            case "kip848_slow_revoke" -> Kip848.slowRevoke(run, args, timeoutMs);
            case "kip848_stale_commit" -> Kip848.staleCommit(run, args, timeoutMs);
            case "kip848_coordinator_dies" -> Kip848.coordinatorDies(run, args, timeoutMs);
            case "read_committed_behind_open_txn" -> Txn.readCommittedBehindOpenTxn(run, args, timeoutMs);
            case JoinGroupHeld.KIND -> JoinGroupHeld.run(run, args, timeoutMs);
            case "configure_producer" -> configureProducer(run);
            case "admin_list_topics" -> adminListTopics(run, args, timeoutMs);
            case "create_topics" -> AdminOps.createTopics(run, args, timeoutMs);
            case "delete_records" -> AdminOps.deleteRecords(run, args, timeoutMs);
            case "close" -> close(run, args, d);
            case "poll" -> consumerStep(run, kind, args, null, d, (c, tp, t) -> {
                seek(c, tp, args.path("offset"));
                return Main.JSON.getNodeFactory().numberNode(c.poll(t == null ? Duration.ZERO : t).count());
            });
            case "committed" -> consumerStep(run, kind, args, group(args), d, (c, tp, t) -> {
                Map<TopicPartition, OffsetAndMetadata> got = t == null ? c.committed(Set.of(tp)) : c.committed(Set.of(tp), t);
                OffsetAndMetadata om = got.get(tp);
                return om == null ? Main.JSON.getNodeFactory().nullNode() : Main.JSON.getNodeFactory().numberNode(om.offset());
            });
            case "position" -> consumerStep(run, kind, args, group(args), d,
                    (c, tp, t) -> Main.JSON.getNodeFactory().numberNode(t == null ? c.position(tp) : c.position(tp, t)));
            case "end_offsets" -> consumerStep(run, kind, args, group(args), d,
                    (c, tp, t) -> offsets(t == null ? c.endOffsets(partitions(tp, args)) : c.endOffsets(partitions(tp, args), t)));
            case "beginning_offsets" -> consumerStep(run, kind, args, group(args), d,
                    (c, tp, t) -> offsets(t == null ? c.beginningOffsets(partitions(tp, args))
                            : c.beginningOffsets(partitions(tp, args), t)));
            case "offsets_for_times" -> consumerStep(run, kind, args, group(args), d, (c, tp, t) -> {
                Map<TopicPartition, Long> query = Map.of(tp, args.path("timestamp_ms").asLong(0));
                return byTime(t == null ? c.offsetsForTimes(query) : c.offsetsForTimes(query, t));
            });
            case "list_topics" -> consumerStep(run, kind, args, group(args), d,
                    (c, tp, t) -> names((t == null ? c.listTopics() : c.listTopics(t)).keySet()));
            case "partitions_for" -> consumerStep(run, kind, args, group(args), d, (c, tp, t) -> {
                ArrayNode ids = Main.JSON.createArrayNode();
                for (PartitionInfo p : t == null ? c.partitionsFor(tp.topic()) : c.partitionsFor(tp.topic(), t)) {
                    ids.add(p.partition());
                }
                return ids;
            });
            case "commit_sync" -> consumerStep(run, kind, args, group(args), d, (c, tp, t) -> {
                Map<TopicPartition, OffsetAndMetadata> offsets = Map.of(tp, new OffsetAndMetadata(args.path("offset").asLong(0)));
                if (t == null) {
                    c.commitSync(offsets);
                } else {
                    c.commitSync(offsets, t);
                }
                return null;
            });
            default -> throw new IllegalArgumentException("no operation " + kind);
        };
    }

    static String group(JsonNode args) {
        return args.hasNonNull("group") ? args.get("group").asText() : null;
    }

    static TopicPartition tp(JsonNode args) {
        return new TopicPartition(args.path("topic").asText("t"), args.path("partition").asInt(0));
    }

    static List<TopicPartition> partitions(TopicPartition tp, JsonNode args) {
        if (!args.path("partitions").isArray()) {
            return List.of(tp);
        }
        List<TopicPartition> out = new ArrayList<>();
        args.get("partitions").forEach(p -> out.add(new TopicPartition(tp.topic(), p.asInt())));
        return out;
    }

    static void seek(KafkaConsumer<byte[], byte[]> c, TopicPartition tp, JsonNode offset) {
        if (offset.isNumber()) {
            c.seek(tp, offset.asLong());
        } else if (offset.asText("earliest").equals("latest")) {
            c.seekToEnd(List.of(tp));
        } else {
            c.seekToBeginning(List.of(tp));
        }
    }

    static JsonNode offsets(Map<TopicPartition, Long> got) {
        ObjectNode o = Main.JSON.createObjectNode();
        got.forEach((tp, off) -> o.put(String.valueOf(tp.partition()), off));
        return o;
    }

    static JsonNode byTime(Map<TopicPartition, OffsetAndTimestamp> got) {
        ObjectNode o = Main.JSON.createObjectNode();
        got.forEach((tp, ot) -> {
            if (ot == null) {
                o.putNull(String.valueOf(tp.partition()));
            } else {
                o.put(String.valueOf(tp.partition()), ot.offset());
            }
        });
        return o;
    }

    static JsonNode names(java.util.Collection<String> names) {
        ArrayNode a = Main.JSON.createArrayNode();
        new TreeSet<>(names).forEach(a::add);
        return a;
    }

    /** One call on a fresh consumer, assigned to the step's partition, timed around the call. */
    static ObjectNode consumerStep(Run run, String kind, JsonNode args, String group, Duration d, ConsumerCall call) {
        KafkaConsumer<byte[], byte[]> c = run.consumer(group, null);
        try {
            TopicPartition tp = tp(args);
            c.assign(List.of(tp));
            if (args.path("warm_up").asBoolean(false)) {   // connections up, coordinator known: time only the call
                try {
                    call.call(c, tp, null);
                } catch (Exception e) {
                    return Outcomes.failed(kind, 0, e);
                }
            }
            long start = System.nanoTime();
            try {
                JsonNode value = call.call(c, tp, d);
                return Outcomes.ok(kind, Outcomes.elapsedMs(start), value);
            } catch (Exception e) {
                return Outcomes.failed(kind, Outcomes.elapsedMs(start), e);
            }
        } finally {   // not close()'s 30 s: a black-holed request would hold the next scenario up
            c.close(CloseOptions.timeout(CLOSE_AFTER_STEP));
        }
    }

    /** close(timeout) with a fetch in flight: a short poll first (poll_first_s, real seconds). */
    static ObjectNode close(Run run, JsonNode args, Duration d) {
        KafkaConsumer<byte[], byte[]> c = run.consumer(null, null);
        c.assign(List.of(tp(args)));
        c.poll(Duration.ofMillis((long) (args.path("poll_first_s").asDouble(0.3) * 1000)));
        long start = System.nanoTime();
        try {
            if (d == null) {
                c.close();
            } else {
                c.close(CloseOptions.timeout(d));
            }
            return Outcomes.ok("close", Outcomes.elapsedMs(start), null);
        } catch (Exception e) {
            return Outcomes.failed("close", Outcomes.elapsedMs(start), e);
        }
    }

    static ProducerRecord<byte[], byte[]> record(JsonNode args) {
        Integer partition = args.hasNonNull("partition") ? args.get("partition").asInt() : null;
        Long timestamp = args.hasNonNull("timestamp_ms") ? args.get("timestamp_ms").asLong() : null;
        return new ProducerRecord<>(args.path("topic").asText(), partition, timestamp,
                Outcomes.argBytes(args.get("key")), Outcomes.argBytes(args.get("value")));
    }

    /** How long a delivery report can take at most: delivery.timeout.ms bounds it; this only guards a hang. */
    static long reportGuardMs(Run run) {
        return run.configLong("delivery.timeout.ms", 120_000) * 3 + run.configLong("max.block.ms", 60_000) + 10_000;
    }

    /** count sends, each awaited (its delivery report) before the next; value: the last offset. */
    static ObjectNode produce(Run run, JsonNode args) {
        KafkaProducer<byte[], byte[]> p;
        try {
            p = run.producer(null);
        } catch (KafkaException e) {
            return Outcomes.failed("produce", 0, constructionCause(e));
        }
        try (p) {
            if (args.path("warm_up").asBoolean(true)) {
                p.partitionsFor(args.path("topic").asText());   // time the send, not the bootstrap
            }
            long start = System.nanoTime();
            try {
                RecordMetadata md = null;
                for (int i = 0; i < args.path("count").asInt(1); i++) {
                    md = p.send(record(args)).get(reportGuardMs(run), TimeUnit.MILLISECONDS);
                }
                return Outcomes.ok("produce", Outcomes.elapsedMs(start), md == null ? null : Main.JSON.getNodeFactory().numberNode(md.offset()));
            } catch (Exception e) {
                return Outcomes.failed("produce", Outcomes.elapsedMs(start), e);
            } finally {
                p.close(Duration.ZERO);
            }
        } catch (Exception e) {   // the warm-up itself failed
            return Outcomes.failed("produce", 0, e);
        }
    }

    /** count sends back to back (gap_s apart, real seconds), then every report awaited. */
    static ObjectNode producePipelined(Run run, JsonNode args) throws InterruptedException {
        try (KafkaProducer<byte[], byte[]> p = run.producer(null)) {
            p.partitionsFor(args.path("topic").asText());
            long start = System.nanoTime();
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (int i = 0; i < args.path("count").asInt(2); i++) {
                futures.add(p.send(record(args)));
                Thread.sleep((long) (args.path("gap_s").asDouble(0.0) * 1000));
            }
            try {
                ArrayNode offsets = Main.JSON.createArrayNode();
                for (Future<RecordMetadata> f : futures) {
                    offsets.add(f.get(reportGuardMs(run), TimeUnit.MILLISECONDS).offset());
                }
                return Outcomes.ok("produce_pipelined", Outcomes.elapsedMs(start), offsets);
            } catch (Exception e) {
                return Outcomes.failed("produce_pipelined", Outcomes.elapsedMs(start), e);
            } finally {
                p.close(Duration.ZERO);
            }
        }
    }

    /**
     * KafkaProducer's constructor wraps what went wrong in KafkaException("Failed to construct
     * kafka producer"): the client's own reason (a ConfigException) is its cause.
     */
    static Throwable constructionCause(KafkaException e) {
        return e.getMessage() != null && e.getMessage().startsWith("Failed to construct") && e.getCause() != null
                ? e.getCause() : e;
    }

    static ObjectNode configureProducer(Run run) {
        long start = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> p = run.producer(null)) {
            p.close(Duration.ZERO);
            return Outcomes.ok("configure_producer", Outcomes.elapsedMs(start), null);
        } catch (KafkaException e) {
            return Outcomes.failed("configure_producer", Outcomes.elapsedMs(start), constructionCause(e));
        }
    }

    /** Admin.listTopics(), repeat times on one client, pause_s (real seconds) apart. */
    static ObjectNode adminListTopics(Run run, JsonNode args, Long timeoutMs) throws InterruptedException {
        int rounds = args.path("repeat").asInt(1);
        try (Admin admin = run.admin(null)) {
            ListTopicsOptions options = new ListTopicsOptions();
            if (timeoutMs != null) {
                options.timeoutMs((int) Math.min(Integer.MAX_VALUE, timeoutMs));
            }
            long start = System.nanoTime();
            JsonNode topics = null;
            for (int i = 0; i < rounds; i++) {
                if (i > 0) {
                    Thread.sleep((long) (args.path("pause_s").asDouble(0.0) * 1000));
                }
                start = System.nanoTime();
                try {
                    topics = names(admin.listTopics(options).names().get());
                } catch (Exception e) {
                    ObjectNode o = Outcomes.failed("admin_list_topics", Outcomes.elapsedMs(start), e);
                    o.put("error_message", "call " + (i + 1) + " of " + rounds + ": " + o.get("error_message").asText());
                    return o;
                }
            }
            ObjectNode ok = Outcomes.ok("admin_list_topics", Outcomes.elapsedMs(start), topics);
            admin.close(Duration.ZERO);
            return ok;
        }
    }
}
