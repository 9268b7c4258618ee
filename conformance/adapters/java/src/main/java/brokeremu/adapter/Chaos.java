package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Failover chaos in real time (conformance/chaos/realtime.py): the program holds one producer or
 * one consumer and is driven a record at a time, so the Python driver keeps the schedule, the
 * accounting and the chaos plan for every client alike.
 *
 * <pre>
 * chaos_producer {bootstrap, client_id, config, topic}      -> {ok}
 * chaos_send     {n, partition, value: {$bytes}}            -> {ok} (the outcome comes later)
 * chaos_outcomes {}                                         -> {outcomes: [[n, offset, error], ...]} reported since the last call
 * chaos_finish   {settle_ms}                                -> {outcomes: [...]} after flush and close
 * chaos_consumer {bootstrap, client_id, config, topic, partitions} -> {ok}
 * chaos_poll     {timeout_ms}                               -> {records: [[partition, offset, {$bytes}], ...]}
 * chaos_close    {}                                         -> {ok}
 * </pre>
 */
final class Chaos {
    private static KafkaProducer<byte[], byte[]> producer;
    private static String topic;
    private static final ConcurrentLinkedQueue<Object[]> OUTCOMES = new ConcurrentLinkedQueue<>();
    private static KafkaConsumer<byte[], byte[]> consumer;

    private Chaos() {
    }

    static boolean handles(String cmd) {
        return cmd.startsWith("chaos_");
    }

    static ObjectNode handle(String cmd, JsonNode request) {
        ObjectNode answer = Main.JSON.createObjectNode();
        switch (cmd) {
            case "chaos_producer" -> {
                Run run = new Run(request.path("bootstrap").asText(), request.path("client_id").asText(),
                        request.path("config"));
                producer = run.producer(request.path("config"));
                topic = request.path("topic").asText();
                answer.put("ok", true);
            }
            case "chaos_send" -> {
                long n = request.path("n").asLong();
                byte[] value = Base64.getDecoder().decode(request.path("value").path("$bytes").asText());
                try {
                    producer.send(new ProducerRecord<>(topic, request.path("partition").asInt(), null, value),
                            (metadata, error) -> OUTCOMES.add(error == null
                                    ? new Object[]{n, metadata.hasOffset() ? metadata.offset() : -1L, null}
                                    : new Object[]{n, null, error.getClass().getSimpleName() + ": " + error.getMessage()}));
                    answer.put("ok", true);
                } catch (RuntimeException e) {   // send() itself refused the record (max.block.ms...)
                    answer.put("ok", false);
                    answer.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
                }
            }
            case "chaos_outcomes" -> drain(answer);
            case "chaos_finish" -> {
                producer.flush();   // bounded: every record fails by delivery.timeout.ms at the latest
                producer.close(Duration.ofMillis(request.path("settle_ms").asLong(5_000)));
                drain(answer);
            }
            case "chaos_consumer" -> {
                Run run = new Run(request.path("bootstrap").asText(), request.path("client_id").asText(),
                        request.path("config"));
                consumer = run.consumer(null, request.path("config"));
                List<TopicPartition> parts = new ArrayList<>();
                for (int p = 0; p < request.path("partitions").asInt(); p++) {
                    parts.add(new TopicPartition(request.path("topic").asText(), p));
                }
                consumer.assign(parts);
                consumer.seekToBeginning(parts);
                answer.put("ok", true);
            }
            case "chaos_poll" -> {
                ArrayNode records = answer.putArray("records");
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(request.path("timeout_ms").asLong()))) {
                    ArrayNode one = records.addArray();
                    one.add(r.partition());
                    one.add(r.offset());
                    one.addObject().put("$bytes", r.value() == null ? "" : Base64.getEncoder().encodeToString(r.value()));
                }
            }
            case "chaos_close" -> {
                consumer.close(Duration.ofSeconds(5));
                answer.put("ok", true);
            }
            default -> answer.put("fatal", "unknown cmd " + cmd);
        }
        return answer;
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
