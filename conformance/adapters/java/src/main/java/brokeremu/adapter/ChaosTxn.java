package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The transactional part of a real-time chaos seed (conformance/chaos/realtime_txn.py, {@code
 * broker-emu chaos --client java --txn}): one transactional producer and/or one read_committed
 * consumer per program, driven a call at a time. A failed call answers {@code error} and {@code
 * kind}: {@code retriable} (make the same call again: a timed-out commit completes the same
 * commit, KafkaProducer's javadoc), {@code fatal} (the producer must be closed: fenced, or an
 * error KafkaProducer documents as unrecoverable) or {@code abortable} (abort the transaction).
 * Every answer carries the delivery outcomes reported since the last one.
 *
 * <pre>
 * chaos_txn_producer {bootstrap, client_id, config}          -> {ok}   (config has transactional.id)
 * chaos_txn_init / chaos_txn_begin / chaos_txn_commit / chaos_txn_abort / chaos_txn_flush {} -> {ok} or {error, kind}
 * chaos_txn_send     {n, topic, partition, value: {$bytes}}  -> {ok} (the outcome comes later: [n, offset, error])
 * chaos_txn_close    {}                                      -> {outcomes}
 * chaos_txn_consumer {bootstrap, client_id, config, topics, partitions} -> {ok}
 * chaos_txn_poll     {timeout_ms}                            -> {records: [[topic, partition, offset, {$bytes}], ...]}
 * chaos_txn_positions {}                                     -> {positions: [[topic, partition, offset], ...]}
 * chaos_txn_commit_offsets {offsets: [[topic, partition, offset], ...]} -> {ok} or {error, kind}
 * chaos_txn_consumer_close {}                                -> {ok}
 * </pre>
 */
final class ChaosTxn {
    private static KafkaProducer<byte[], byte[]> producer;
    private static KafkaConsumer<byte[], byte[]> consumer;
    private static final List<TopicPartition> ASSIGNED = new ArrayList<>();
    private static final ConcurrentLinkedQueue<Object[]> OUTCOMES = new ConcurrentLinkedQueue<>();

    private ChaosTxn() {
    }

    static boolean handles(String cmd) {
        return cmd.startsWith("chaos_txn_");
    }

    static ObjectNode handle(String cmd, JsonNode request) {
        ObjectNode answer = Main.JSON.createObjectNode();
        try {
            act(cmd, request, answer);
            if (!answer.has("fatal")) {
                answer.put("ok", true);
            }
        } catch (KafkaException e) {
            answer.put("ok", false);
            answer.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            answer.put("kind", kind(e));
        } catch (IllegalStateException e) {   // a call the producer's state refuses (after a fatal error)
            answer.put("ok", false);
            answer.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            answer.put("kind", "fatal");
        }
        drain(answer);
        return answer;
    }

    /** What the caller does next after {@code e} (KafkaProducer's javadoc of each transactional call). */
    private static String kind(KafkaException e) {
        if (e instanceof TimeoutException || e instanceof InterruptException) {
            return "retriable";
        }
        if (e instanceof ProducerFencedException || e instanceof InvalidProducerEpochException
                || e instanceof OutOfOrderSequenceException || e instanceof UnsupportedVersionException
                || e instanceof AuthorizationException) {
            return "fatal";
        }
        return "abortable";
    }

    private static void act(String cmd, JsonNode request, ObjectNode answer) {
        switch (cmd) {
            case "chaos_txn_producer" -> producer = new Run(request.path("bootstrap").asText(),
                    request.path("client_id").asText(), request.path("config")).producer(request.path("config"));
            case "chaos_txn_init" -> producer.initTransactions();
            case "chaos_txn_begin" -> producer.beginTransaction();
            case "chaos_txn_send" -> send(request);
            case "chaos_txn_flush" -> producer.flush();
            case "chaos_txn_commit" -> producer.commitTransaction();
            case "chaos_txn_abort" -> producer.abortTransaction();
            case "chaos_txn_close" -> producer.close(Duration.ofSeconds(5));
            case "chaos_txn_consumer" -> assign(request);
            case "chaos_txn_poll" -> poll(request, answer);
            case "chaos_txn_positions" -> {
                ArrayNode out = answer.putArray("positions");
                for (TopicPartition tp : ASSIGNED) {
                    ArrayNode one = out.addArray();
                    one.add(tp.topic());
                    one.add(tp.partition());
                    one.add(consumer.position(tp, Duration.ofSeconds(5)));
                }
            }
            case "chaos_txn_commit_offsets" -> {
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (JsonNode o : request.path("offsets")) {
                    offsets.put(new TopicPartition(o.get(0).asText(), o.get(1).asInt()),
                            new OffsetAndMetadata(o.get(2).asLong()));
                }
                consumer.commitSync(offsets, Duration.ofSeconds(5));
            }
            case "chaos_txn_consumer_close" -> consumer.close(Duration.ofSeconds(5));
            default -> answer.put("fatal", "unknown cmd " + cmd);
        }
    }

    private static void send(JsonNode request) {
        long n = request.path("n").asLong();
        byte[] value = Base64.getDecoder().decode(request.path("value").path("$bytes").asText());
        producer.send(new ProducerRecord<>(request.path("topic").asText(), request.path("partition").asInt(), null, value),
                (metadata, error) -> OUTCOMES.add(error == null
                        ? new Object[]{n, metadata.hasOffset() ? metadata.offset() : -1L, null}
                        : new Object[]{n, null, error.getClass().getSimpleName() + ": " + error.getMessage()}));
    }

    private static void assign(JsonNode request) {
        consumer = new Run(request.path("bootstrap").asText(), request.path("client_id").asText(),
                request.path("config")).consumer(request.path("config").path("group.id").asText(), request.path("config"));
        for (JsonNode topic : request.path("topics")) {
            for (int p = 0; p < request.path("partitions").asInt(); p++) {
                ASSIGNED.add(new TopicPartition(topic.asText(), p));
            }
        }
        consumer.assign(ASSIGNED);
        consumer.seekToBeginning(ASSIGNED);
    }

    private static void poll(JsonNode request, ObjectNode answer) {
        ArrayNode records = answer.putArray("records");
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(request.path("timeout_ms").asLong()))) {
            ArrayNode one = records.addArray();
            one.add(r.topic());
            one.add(r.partition());
            one.add(r.offset());
            one.addObject().put("$bytes", r.value() == null ? "" : Base64.getEncoder().encodeToString(r.value()));
        }
    }

    private static void drain(ObjectNode answer) {
        ArrayNode out = answer.putArray("outcomes");
        Object[] o;
        while ((o = OUTCOMES.poll()) != null) {
            ArrayNode one = out.addArray();
            one.add((Long) o[0]);
            if (o[1] == null) {
                one.addNull();
            } else {
                one.add((Long) o[1]);
            }
            if (o[2] == null) {
                one.addNull();
            } else {
                one.add((String) o[2]);
            }
        }
    }
}
