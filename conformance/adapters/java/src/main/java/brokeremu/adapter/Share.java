package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

/**
 * KIP-932 share groups through KafkaShareConsumer. {@code share_consume} (implicit
 * acknowledgement: a poll or commitSync accepts what the previous poll returned): two members of a
 * share group; the first receives {@code count} records and then stops polling, so their
 * acquisition locks run out on the broker; the second receives them again and accepts them with
 * commitSync; the first's late acknowledgement comes back refused ({@code redeliver: false}: one
 * member reads and accepts). {@code share_explicit}: explicit acknowledgement, each record as its
 * value says (accept, release, reject).
 */
final class Share {
    private static final Duration TICK = Duration.ofMillis(50);

    private Share() {
    }

    /** Only the share consumer's own settings: it refuses the classic consumer's (group.protocol...). */
    static KafkaShareConsumer<byte[], byte[]> consumer(Run run, String group, String clientId) {
        return consumer(run, group, clientId, "implicit");
    }

    static KafkaShareConsumer<byte[], byte[]> consumer(Run run, String group, String clientId, String mode) {
        Properties p = new Properties();
        p.put("bootstrap.servers", run.bootstrap);
        p.put("group.id", group);
        p.put("client.id", clientId);
        p.put("share.acknowledgement.mode", mode);
        return new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /**
     * Explicit acknowledgement: each of the first {@code count} records gets the type its value
     * names (a value starting "accept", "release" or "reject"); after commitSync the member polls
     * on until {@code again} more records come back (the released ones, delivery count 2), and
     * accepts those.
     */
    static JsonNode explicit(Run run, JsonNode args) {
        String group = args.path("group").asText("share-group");
        int count = args.path("count").asInt(1);
        int again = args.path("again").asInt(0);
        long limitMs = args.path("max_ms").asLong(30_000);
        ObjectNode out = Main.JSON.createObjectNode();
        try (KafkaShareConsumer<byte[], byte[]> c = consumer(run, group, run.clientId + "-explicit", "explicit")) {
            c.subscribe(List.of(args.path("topic").asText("t")));
            Map<String, ConsumerRecord<byte[], byte[]>> first = receiveAcknowledging(c, count, limitMs);
            out.set("first", describe(first));
            out.set("first_commit", commitResult(c.commitSync(Duration.ofMillis(limitMs))));
            Map<String, ConsumerRecord<byte[], byte[]>> later = receiveAcknowledging(c, again, limitMs);
            out.set("again", describe(later));
            out.set("again_commit", commitResult(c.commitSync(Duration.ofMillis(limitMs))));
        }
        return out;
    }

    /** Poll until {@code count} records came, acknowledging each as its value says (else ACCEPT). */
    static Map<String, ConsumerRecord<byte[], byte[]>> receiveAcknowledging(KafkaShareConsumer<byte[], byte[]> c,
                                                                            int count, long limitMs) {
        Map<String, ConsumerRecord<byte[], byte[]>> got = new TreeMap<>();
        long end = System.nanoTime() + limitMs * 1_000_000L;
        while (got.size() < count && System.nanoTime() < end) {
            for (ConsumerRecord<byte[], byte[]> r : c.poll(TICK)) {
                got.put(String.format("%06d-%012d", r.partition(), r.offset()), r);
                String value = new String(r.value(), java.nio.charset.StandardCharsets.UTF_8);
                boolean firstTime = r.deliveryCount().map(n -> n == 1).orElse(true);
                AcknowledgeType type = !firstTime || value.startsWith("accept") ? AcknowledgeType.ACCEPT
                        : value.startsWith("release") ? AcknowledgeType.RELEASE : AcknowledgeType.REJECT;
                c.acknowledge(r, type);
            }
        }
        return got;
    }

    /** Poll {@code c} until it has {@code count} records or {@code limitMs} passed: by (partition, offset). */
    static Map<String, ConsumerRecord<byte[], byte[]>> receive(KafkaShareConsumer<byte[], byte[]> c, int count, long limitMs) {
        Map<String, ConsumerRecord<byte[], byte[]>> got = new TreeMap<>();
        long end = System.nanoTime() + limitMs * 1_000_000L;
        while (got.size() < count && System.nanoTime() < end) {
            ConsumerRecords<byte[], byte[]> records = c.poll(TICK);
            for (ConsumerRecord<byte[], byte[]> r : records) {
                got.put(String.format("%06d-%012d", r.partition(), r.offset()), r);
            }
        }
        return got;
    }

    static ArrayNode describe(Map<String, ConsumerRecord<byte[], byte[]>> records) {
        ArrayNode out = Main.JSON.createArrayNode();
        records.values().forEach(r -> {
            ObjectNode o = out.addObject();
            o.put("offset", r.offset());
            o.put("partition", r.partition());
            o.put("delivery_count", r.deliveryCount().map(Short::intValue).orElse(-1));
            o.set("value", Outcomes.bytes(r.value()));
        });
        return out;
    }

    static ObjectNode commitResult(Map<TopicIdPartition, Optional<KafkaException>> result) {
        ObjectNode out = Main.JSON.createObjectNode();
        new TreeMap<>(result.entrySet().stream().collect(java.util.stream.Collectors.toMap(
                e -> e.getKey().topic() + "-" + e.getKey().partition(), Map.Entry::getValue))).forEach(
                (name, error) -> out.put(name, error.map(e -> e.getClass().getSimpleName()).orElse("")));
        return out;
    }

    static JsonNode consume(Run run, JsonNode args) {
        String group = args.path("group").asText("share-group");
        String topic = args.path("topic").asText("t");
        int count = args.path("count").asInt(1);
        long limitMs = args.path("max_ms").asLong(30_000);
        return args.path("redeliver").asBoolean(true) ? redeliver(run, group, topic, count, limitMs)
                : acceptAll(run, group, topic, count, limitMs);
    }

    /** One member receives {@code count} records and accepts them. */
    static JsonNode acceptAll(Run run, String group, String topic, int count, long limitMs) {
        ObjectNode out = Main.JSON.createObjectNode();
        try (KafkaShareConsumer<byte[], byte[]> only = consumer(run, group, run.clientId + "-only")) {
            only.subscribe(List.of(topic));
            out.set("first", describe(receive(only, count, limitMs)));
            out.set("first_commit", commitResult(only.commitSync(Duration.ofMillis(limitMs))));
        }
        return out;
    }

    /** The first member lets its locks run out; the second gets the records again. */
    static JsonNode redeliver(Run run, String group, String topic, int count, long limitMs) {
        ObjectNode out = Main.JSON.createObjectNode();
        try (KafkaShareConsumer<byte[], byte[]> first = consumer(run, group, run.clientId + "-first");
             KafkaShareConsumer<byte[], byte[]> second = consumer(run, group, run.clientId + "-second")) {
            first.subscribe(List.of(topic));
            second.subscribe(List.of(topic));
            Map<String, ConsumerRecord<byte[], byte[]>> once = receive(first, count, limitMs);
            long received = System.nanoTime();
            out.set("first", describe(once));
            out.put("lock_ms", first.acquisitionLockTimeoutMs().map(Integer::longValue).orElse(-1L));
            // the first member polls no more: its locks run out and the second gets the records again
            Map<String, ConsumerRecord<byte[], byte[]>> again = receive(second, count, limitMs);
            out.put("redelivered_after_ms", (System.nanoTime() - received) / 1_000_000L);
            out.set("second", describe(again));
            out.set("second_commit", commitResult(second.commitSync(Duration.ofMillis(limitMs))));
            out.set("first_commit", commitResult(first.commitSync(Duration.ofMillis(limitMs))));
        }
        return out;
    }
}
