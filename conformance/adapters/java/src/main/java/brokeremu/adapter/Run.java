package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.util.Iterator;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * One {@code run} request: where the brokers are and the scenario's client config (Kafka's own
 * dotted names, passed through to each client that knows them; already scaled by the caller).
 */
final class Run {
    final String bootstrap;
    final String clientId;
    final JsonNode config;

    Run(String bootstrap, String clientId, JsonNode config) {
        this.bootstrap = bootstrap;
        this.clientId = clientId;
        this.config = config;
    }

    /** The config keys among {@code known}, as strings (ConfigDef parses strings for every type). */
    private Properties props(Set<String> known, JsonNode extra) {
        Properties p = new Properties();
        for (JsonNode source : new JsonNode[]{config, extra}) {
            if (source == null) {
                continue;
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = source.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                if (known.contains(e.getKey()) && !e.getValue().isNull()) {
                    p.put(e.getKey(), e.getValue().asText());
                }
            }
        }
        p.put("bootstrap.servers", bootstrap);
        p.putIfAbsent("client.id", clientId);
        return p;
    }

    long configLong(String key, long otherwise) {
        JsonNode v = config.get(key);
        return v == null || v.isNull() ? otherwise : v.asLong();
    }

    KafkaProducer<byte[], byte[]> producer(JsonNode extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");   // one record, one batch, sent at once (as the other adapters)
        p.putAll(props(ProducerConfig.configNames(), extra));
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** A consumer; {@code group} null: no group (assign only). */
    KafkaConsumer<byte[], byte[]> consumer(String group, JsonNode extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.putAll(props(ConsumerConfig.configNames(), extra));
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        } else {
            p.remove(ConsumerConfig.GROUP_ID_CONFIG);
        }
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    Admin admin(JsonNode extra) {
        return Admin.create(props(AdminClientConfig.configNames(), extra));
    }
}
