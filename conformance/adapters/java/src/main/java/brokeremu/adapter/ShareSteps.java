package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * The share scenarios' steps (conformance/scenarios_share.py): each is one story of a share group
 * told with KafkaShareConsumer in explicit acknowledgement mode, its times measured here around
 * the calls the contracts hold to a deadline. Every step first sets the group's own configs
 * (IncrementalAlterConfigs on the GROUP resource: share.record.lock.duration.ms,
 * share.delivery.count.limit, share.auto.offset.reset), so it runs alike on the emulator and on a
 * real Kafka, whose broker settings cannot change per scenario. Times in args are real ms,
 * already scaled by the caller.
 */
final class ShareSteps {
    static final List<String> OPERATIONS = List.of("share_lock_expires", "share_renew", "share_ack_black_holed",
            "share_delivery_limit", "share_close_pending");
    private static final Duration TICK = Duration.ofMillis(50);
    // the share consumer's settings a scenario may scale (it refuses the classic consumer's own)
    private static final Set<String> PASSED = Set.of("request.timeout.ms", "default.api.timeout.ms",
            "retry.backoff.ms", "retry.backoff.max.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
            "socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms", "fetch.max.wait.ms");

    private ShareSteps() {
    }

    static JsonNode perform(Run run, String kind, JsonNode args, Long timeoutMs) throws Exception {
        configureGroup(run, args.path("group").asText(), args.path("group_config"));
        return switch (kind) {
            case "share_lock_expires" -> lockExpires(run, args);
            case "share_renew" -> renew(run, args);
            case "share_ack_black_holed" -> ackBlackHoled(run, args, timeoutMs);
            case "share_delivery_limit" -> deliveryLimit(run, args);
            case "share_close_pending" -> closePending(run, args, timeoutMs);
            default -> throw new IllegalArgumentException("no operation " + kind);
        };
    }

    static void configureGroup(Run run, String group, JsonNode config) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = config.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue().asText()), AlterConfigOp.OpType.SET));
        }
        if (ops.isEmpty()) {
            return;
        }
        try (Admin admin = run.admin(null)) {
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops)).all().get();
        }
    }

    static KafkaShareConsumer<byte[], byte[]> member(Run run, String group, String suffix) {
        Properties p = new Properties();
        for (Iterator<Map.Entry<String, JsonNode>> it = run.config.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (PASSED.contains(e.getKey()) && !e.getValue().isNull()) {
                p.put(e.getKey(), e.getValue().asText());
            }
        }
        p.put("bootstrap.servers", run.bootstrap);
        p.put("group.id", group);
        p.put("client.id", run.clientId + suffix);
        p.put("share.acknowledgement.mode", "explicit");
        return new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static long ms(long sinceNanos) {
        return (System.nanoTime() - sinceNanos) / 1_000_000L;
    }

    static ObjectNode record(ConsumerRecord<byte[], byte[]> r, String member, long atMs) {
        ObjectNode o = Main.JSON.createObjectNode();
        o.put("member", member).put("offset", r.offset()).put("partition", r.partition()).put("at_ms", atMs);
        o.put("delivery_count", r.deliveryCount().map(Short::intValue).orElse(-1));
        o.set("value", Outcomes.bytes(r.value()));
        return o;
    }

    static String value(ConsumerRecord<byte[], byte[]> r) {
        return r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8);
    }

    /** The result of a commitSync: "" per partition when accepted, else the exception's name. */
    static JsonNode commit(KafkaShareConsumer<byte[], byte[]> c, Duration timeout, long start, ObjectNode out, String key) {
        long t = System.nanoTime();
        try {
            out.set(key, Share.commitResult(c.commitSync(timeout)));
        } catch (RuntimeException e) {
            out.put(key, e.getClass().getSimpleName());
        }
        out.put(key + "_ms", ms(t));
        out.put(key + "_at_ms", ms(start));
        return out;
    }

    static void close(KafkaShareConsumer<byte[], byte[]> c, long closeMs) {
        try {
            c.close(Duration.ofMillis(closeMs));
        } catch (RuntimeException e) {
            // a close that could not send what it held: the step's story is already told
        }
    }

    /**
     * Two members poll in turn until one receives the record; that one "processes" it for
     * {@code process_ms} without polling, longer than the record's lock, while the other polls on
     * and receives it again at the lock's expiry. The holder's acknowledgement afterwards comes
     * too late.
     */
    static JsonNode lockExpires(Run run, JsonNode args) {
        String group = args.path("group").asText();
        long processMs = args.path("process_ms").asLong();
        long maxMs = args.path("max_ms").asLong(30_000);
        ObjectNode out = Main.JSON.createObjectNode();
        KafkaShareConsumer<byte[], byte[]> a = member(run, group, "-a");
        KafkaShareConsumer<byte[], byte[]> b = member(run, group, "-b");
        try {
            a.subscribe(List.of(args.path("topic").asText()));
            b.subscribe(List.of(args.path("topic").asText()));
            long start = System.nanoTime();
            Held held = firstToReceive(a, b, start, maxMs);
            if (held == null) {
                out.put("error", "no member received a record within max_ms");
                return out;
            }
            out.set("first", held.records);
            out.put("lock_ms", held.holder.acquisitionLockTimeoutMs().map(Integer::longValue).orElse(-1L));
            KafkaShareConsumer<byte[], byte[]> other = held.holder == a ? b : a;
            String otherName = held.holder == a ? "b" : "a";
            long processUntil = held.atNanos + processMs * 1_000_000L;
            ArrayNode again = out.putArray("second");
            while (again.isEmpty() && System.nanoTime() < processUntil) {
                for (ConsumerRecord<byte[], byte[]> r : other.poll(TICK)) {
                    again.add(record(r, otherName, ms(start)));
                    other.acknowledge(r, AcknowledgeType.ACCEPT);
                }
            }
            if (!again.isEmpty()) {
                commit(other, Duration.ofMillis(maxMs), start, out, "second_commit");
            }
            sleepUntil(processUntil);
            // the processing is done: the holder accepts what it holds no more (KafkaShareConsumer may refuse
            // it itself, IllegalStateException, when its background fetch has replaced the batch meanwhile)
            try {
                for (ConsumerRecord<byte[], byte[]> r : held.raw) {
                    held.holder.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                commit(held.holder, Duration.ofMillis(maxMs), start, out, "first_commit");
            } catch (RuntimeException e) {
                out.put("first_commit", e.getClass().getSimpleName());
            }
        } finally {
            close(a, maxMs);
            close(b, maxMs);
        }
        return out;
    }

    /**
     * As lockExpires, but the holder renews its lock (acknowledge RENEW, commitSync) every
     * {@code renew_ms} while it processes; the other member polls throughout and should receive
     * nothing. Then the holder accepts.
     */
    static JsonNode renew(Run run, JsonNode args) {
        String group = args.path("group").asText();
        String topic = args.path("topic").asText();
        long processMs = args.path("process_ms").asLong();
        long renewMs = args.path("renew_ms").asLong();
        long maxMs = args.path("max_ms").asLong(30_000);
        ObjectNode out = Main.JSON.createObjectNode();
        KafkaShareConsumer<byte[], byte[]> a = member(run, group, "-a");
        KafkaShareConsumer<byte[], byte[]> b = member(run, group, "-b");
        try {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            long start = System.nanoTime();
            Held held = firstToReceive(a, b, start, maxMs);
            if (held == null) {
                out.put("error", "no member received a record within max_ms");
                return out;
            }
            out.set("first", held.records);
            KafkaShareConsumer<byte[], byte[]> other = held.holder == a ? b : a;
            String otherName = held.holder == a ? "b" : "a";
            long processUntil = held.atNanos + processMs * 1_000_000L;
            long nextRenew = held.atNanos + renewMs * 1_000_000L;
            ArrayNode stolen = out.putArray("second");
            ArrayNode renewals = out.putArray("renewals");
            while (System.nanoTime() < processUntil) {
                for (ConsumerRecord<byte[], byte[]> r : other.poll(TICK)) {
                    stolen.add(record(r, otherName, ms(start)));
                    other.acknowledge(r, AcknowledgeType.RELEASE);
                }
                if (System.nanoTime() >= nextRenew && System.nanoTime() < processUntil) {
                    for (ConsumerRecord<byte[], byte[]> r : held.raw) {
                        held.holder.acknowledge(r, AcknowledgeType.RENEW);
                    }
                    ObjectNode one = renewals.addObject();
                    commit(held.holder, Duration.ofMillis(maxMs), start, one, "commit");
                    // the renewed records come back from the next poll (ShareFetch.takeRenewedRecords), to be
                    // acknowledged again
                    List<ConsumerRecord<byte[], byte[]>> back = new ArrayList<>();
                    for (ConsumerRecord<byte[], byte[]> r : held.holder.poll(Duration.ZERO)) {
                        one.withArray("returned").add(record(r, held.name, ms(start)));
                        back.add(r);
                    }
                    if (!back.isEmpty()) {
                        held.raw = back;
                    }
                    nextRenew += renewMs * 1_000_000L;
                }
            }
            try {
                for (ConsumerRecord<byte[], byte[]> r : held.raw) {
                    held.holder.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                commit(held.holder, Duration.ofMillis(maxMs), start, out, "first_commit");
            } catch (RuntimeException e) {
                out.put("first_commit", e.getClass().getSimpleName());
            }
        } finally {
            close(a, maxMs);
            close(b, maxMs);
        }
        return out;
    }

    /**
     * One member accepts the record it received with commitSync(timeout) while ShareAcknowledge is
     * black-holed: the call must return at its deadline. The other member then receives the
     * record again when the lock runs out.
     */
    static JsonNode ackBlackHoled(Run run, JsonNode args, Long timeoutMs) {
        String group = args.path("group").asText();
        long maxMs = args.path("max_ms").asLong(30_000);
        long closeMs = args.path("close_ms").asLong(1000);
        ObjectNode out = Main.JSON.createObjectNode();
        KafkaShareConsumer<byte[], byte[]> a = member(run, group, "-a");
        KafkaShareConsumer<byte[], byte[]> b = member(run, group, "-b");
        try {
            a.subscribe(List.of(args.path("topic").asText()));
            b.subscribe(List.of(args.path("topic").asText()));
            long start = System.nanoTime();
            Held held = firstToReceive(a, b, start, maxMs);
            if (held == null) {
                out.put("error", "no member received a record within max_ms");
                return out;
            }
            out.set("first", held.records);
            for (ConsumerRecord<byte[], byte[]> r : held.raw) {
                held.holder.acknowledge(r, AcknowledgeType.ACCEPT);
            }
            commit(held.holder, Duration.ofMillis(timeoutMs == null ? maxMs : timeoutMs), start, out, "first_commit");
            KafkaShareConsumer<byte[], byte[]> other = held.holder == a ? b : a;
            String otherName = held.holder == a ? "b" : "a";
            ArrayNode again = out.putArray("second");
            long end = System.nanoTime() + maxMs * 1_000_000L;
            while (again.isEmpty() && System.nanoTime() < end) {
                for (ConsumerRecord<byte[], byte[]> r : other.poll(TICK)) {
                    again.add(record(r, otherName, ms(start)));
                }
            }
        } finally {
            // ShareAcknowledge is still black-holed: closes bounded, not the default 30 s
            close(a, closeMs);
            close(b, closeMs);
        }
        return out;
    }

    /**
     * One member releases every record whose value starts "poison" and accepts the others, polling
     * until {@code watch_ms} passed without a delivery (the first one awaited up to max_ms: a real
     * Kafka assigns a new member at its next heartbeat): the poison record comes back until its
     * delivery count reaches the group's share.delivery.count.limit, and then never again.
     */
    static JsonNode deliveryLimit(Run run, JsonNode args) {
        String group = args.path("group").asText();
        long watchMs = args.path("watch_ms").asLong();
        long maxMs = args.path("max_ms").asLong(30_000);
        ObjectNode out = Main.JSON.createObjectNode();
        KafkaShareConsumer<byte[], byte[]> c = member(run, group, "-a");
        try {
            c.subscribe(List.of(args.path("topic").asText()));
            long start = System.nanoTime();
            long end = start + maxMs * 1_000_000L;
            ArrayNode deliveries = out.putArray("deliveries");
            ArrayNode commits = out.putArray("commits");
            while (System.nanoTime() < end) {
                boolean any = false;
                if (!deliveries.isEmpty()) {
                    end = Math.min(end, start + (deliveries.get(deliveries.size() - 1).path("at_ms").asLong() + watchMs)
                            * 1_000_000L);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(TICK)) {
                    any = true;
                    deliveries.add(record(r, "a", ms(start)));
                    c.acknowledge(r, value(r).startsWith("poison") ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                }
                if (any) {
                    commit(c, Duration.ofMillis(maxMs), start, commits.addObject(), "commit");
                }
            }
        } finally {
            close(c, maxMs);
        }
        return out;
    }

    /**
     * One member receives the record, accepts it without committing, and closes with
     * close(timeout): the close sends the pending acknowledgement, and returns when it is
     * answered or at its deadline.
     */
    static JsonNode closePending(Run run, JsonNode args, Long timeoutMs) {
        String group = args.path("group").asText();
        long maxMs = args.path("max_ms").asLong(30_000);
        ObjectNode out = Main.JSON.createObjectNode();
        KafkaShareConsumer<byte[], byte[]> c = member(run, group, "-a");
        boolean closed = false;
        try {
            c.subscribe(List.of(args.path("topic").asText()));
            long start = System.nanoTime();
            ArrayNode first = out.putArray("first");
            while (first.isEmpty() && ms(start) < maxMs) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(TICK)) {
                    first.add(record(r, "a", ms(start)));
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
            }
            long t = System.nanoTime();
            out.put("close_at_ms", ms(start));
            try {
                c.close(Duration.ofMillis(timeoutMs == null ? maxMs : timeoutMs));
                out.put("close", "");
            } catch (RuntimeException e) {
                out.put("close", e.getClass().getSimpleName());
            }
            closed = true;
            out.put("close_ms", ms(t));
        } finally {
            if (!closed) {
                close(c, maxMs);
            }
        }
        return out;
    }

    /** The member that received records first, what it received and when. */
    static final class Held {
        KafkaShareConsumer<byte[], byte[]> holder;
        String name;
        ArrayNode records = Main.JSON.createArrayNode();
        List<ConsumerRecord<byte[], byte[]>> raw = new ArrayList<>();
        long atNanos;
    }

    /** a and b poll in turn until one receives records (explicit mode: held unacknowledged). */
    static Held firstToReceive(KafkaShareConsumer<byte[], byte[]> a, KafkaShareConsumer<byte[], byte[]> b, long start,
                               long maxMs) {
        while (ms(start) < maxMs) {
            for (KafkaShareConsumer<byte[], byte[]> c : List.of(a, b)) {
                Held held = new Held();
                held.name = c == a ? "a" : "b";
                for (ConsumerRecord<byte[], byte[]> r : c.poll(TICK)) {
                    held.records.add(record(r, held.name, ms(start)));
                    held.raw.add(r);
                }
                if (!held.records.isEmpty()) {
                    held.holder = c;
                    held.atNanos = System.nanoTime();
                    return held;
                }
            }
        }
        return null;
    }

    static void sleepUntil(long nanos) {
        long left = nanos - System.nanoTime();
        if (left > 0) {
            try {
                Thread.sleep(left / 1_000_000L, (int) (left % 1_000_000L));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
