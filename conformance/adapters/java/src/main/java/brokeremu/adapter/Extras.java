package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;

/**
 * Steps beyond the conformance operations, for tests/realclients/test_java_client.py: several
 * records at once, reading a partition back, consuming in a group, and the admin client. Each
 * takes an optional "config" object of Kafka settings for its own client (e.g. max.request.size).
 */
final class Extras {
    static final List<String> OPERATIONS = List.of("produce_batch", "read_partition", "group_consume",
            "admin_create_topics", "admin_delete_topics", "admin_describe_cluster", "admin_list_groups",
            "admin_describe_groups", "admin_describe_topics", "txn_commit_abort", "admin_calls", "share_consume",
            "share_explicit", "share_admin");
    static final List<String> ALL = java.util.stream.Stream.concat(OPERATIONS.stream(), ShareSteps.OPERATIONS.stream())
            .toList();

    private Extras() {
    }

    interface Body {
        JsonNode run() throws Exception;
    }

    static ObjectNode perform(Run run, String kind, JsonNode args, Long timeoutMs) {
        long start = System.nanoTime();
        try {
            JsonNode value = ShareSteps.OPERATIONS.contains(kind) ? ShareSteps.perform(run, kind, args, timeoutMs)
                    : body(run, kind, args).run();
            return Outcomes.ok(kind, Outcomes.elapsedMs(start), value);
        } catch (Exception e) {
            return Outcomes.failed(kind, Outcomes.elapsedMs(start), e);
        }
    }

    static Body body(Run run, String kind, JsonNode args) {
        JsonNode cfg = args.get("config");
        return switch (kind) {
            case "produce_batch" -> () -> produceBatch(run, args, cfg);
            case "read_partition" -> () -> readPartition(run, args, cfg);
            case "group_consume" -> () -> groupConsume(run, args, cfg);
            case "admin_create_topics" -> () -> admin(run, cfg, a -> {
                List<NewTopic> topics = new ArrayList<>();
                args.path("topics").forEach(t -> topics.add(new NewTopic(t.path("name").asText(),
                        t.path("partitions").asInt(1), (short) t.path("replication_factor").asInt(1))));
                a.createTopics(topics).all().get();
                return null;
            });
            case "admin_delete_topics" -> () -> admin(run, cfg, a -> {
                List<String> names = new ArrayList<>();
                args.path("names").forEach(n -> names.add(n.asText()));
                a.deleteTopics(names).all().get();
                return null;
            });
            case "admin_describe_cluster" -> () -> admin(run, cfg, Extras::describeCluster);
            case "admin_list_groups" -> () -> admin(run, cfg, a -> {
                List<String> ids = new ArrayList<>();
                for (GroupListing g : a.listGroups().all().get()) {
                    ids.add(g.groupId());
                }
                return Ops.names(ids);
            });
            case "admin_describe_groups" -> () -> admin(run, cfg, a -> describeGroups(a, args));
            case "admin_describe_topics" -> () -> admin(run, cfg, a -> describeTopics(a, args));
            case "txn_commit_abort" -> () -> Txn.commitAndAbort(run, args);
            case "admin_calls" -> () -> AdminCalls.all(run, args, cfg);
            case "share_consume" -> () -> Share.consume(run, args);
            case "share_explicit" -> () -> Share.explicit(run, args);
            case "share_admin" -> () -> ShareAdmin.run(run, args, cfg);
            default -> throw new IllegalArgumentException("no operation " + kind);
        };
    }

    interface AdminBody {
        JsonNode run(Admin admin) throws Exception;
    }

    static JsonNode admin(Run run, JsonNode cfg, AdminBody body) throws Exception {
        try (Admin admin = run.admin(cfg)) {
            return body.run(admin);
        }
    }

    static JsonNode describeCluster(Admin a) throws Exception {
        DescribeClusterResult r = a.describeCluster();
        ObjectNode o = Main.JSON.createObjectNode();
        o.put("cluster_id", r.clusterId().get());
        Node controller = r.controller().get();
        o.put("controller", controller == null ? -1 : controller.id());
        ArrayNode nodes = o.putArray("nodes");
        r.nodes().get().stream().map(Node::id).sorted().forEach(nodes::add);
        return o;
    }

    static JsonNode describeGroups(Admin a, JsonNode args) throws Exception {
        List<String> ids = new ArrayList<>();
        args.path("groups").forEach(g -> ids.add(g.asText()));
        ObjectNode o = Main.JSON.createObjectNode();
        for (Map.Entry<String, ConsumerGroupDescription> e : a.describeConsumerGroups(ids).all().get().entrySet()) {
            ObjectNode g = o.putObject(e.getKey());
            g.put("state", String.valueOf(e.getValue().groupState()));
            g.put("members", e.getValue().members().size());
            g.put("assignor", e.getValue().partitionAssignor());
        }
        return o;
    }

    static JsonNode describeTopics(Admin a, JsonNode args) throws Exception {
        List<String> names = new ArrayList<>();
        args.path("names").forEach(n -> names.add(n.asText()));
        ObjectNode o = Main.JSON.createObjectNode();
        for (Map.Entry<String, TopicDescription> e : a.describeTopics(names).allTopicNames().get().entrySet()) {
            o.put(e.getKey(), e.getValue().partitions().size());
        }
        return o;
    }

    /** records [{value, key, partition, timestamp_ms}], all sent, then every report awaited. */
    static JsonNode produceBatch(Run run, JsonNode args, JsonNode cfg) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = run.producer(cfg)) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (JsonNode r : args.path("records")) {
                ObjectNode rec = r.deepCopy();
                rec.put("topic", args.path("topic").asText());
                futures.add(p.send(Ops.record(rec)));
            }
            ArrayNode out = Main.JSON.createArrayNode();
            for (Future<RecordMetadata> f : futures) {
                RecordMetadata md = f.get();
                out.addObject().put("partition", md.partition()).put("offset", md.offset());
            }
            return out;
        }
    }

    static ArrayNode records(Iterable<ConsumerRecord<byte[], byte[]>> got, ArrayNode out) {
        for (ConsumerRecord<byte[], byte[]> r : got) {
            ObjectNode o = out.addObject();
            o.put("partition", r.partition()).put("offset", r.offset()).put("timestamp", r.timestamp());
            o.set("value", Outcomes.bytes(r.value()));
        }
        return out;
    }

    /** Assign one partition, start at "offset", poll until "count" records or max_s. */
    static JsonNode readPartition(Run run, JsonNode args, JsonNode cfg) {
        try (KafkaConsumer<byte[], byte[]> c = run.consumer(null, cfg)) {
            TopicPartition tp = Ops.tp(args);
            c.assign(List.of(tp));
            Ops.seek(c, tp, args.path("offset"));
            return pollUntil(c, args);
        }
    }

    static ArrayNode pollUntil(KafkaConsumer<byte[], byte[]> c, JsonNode args) {
        ArrayNode out = Main.JSON.createArrayNode();
        long deadline = System.nanoTime() + (long) (args.path("max_s").asDouble(30) * 1e9);
        while (out.size() < args.path("count").asInt(1) && System.nanoTime() < deadline) {
            records(c.poll(Duration.ofMillis(200)), out);
        }
        return out;
    }

    /** Subscribe to topic in group, poll until count records, commitSync, close (leaving the group). */
    static JsonNode groupConsume(Run run, JsonNode args, JsonNode cfg) {
        try (KafkaConsumer<byte[], byte[]> c = run.consumer(args.path("group").asText(), cfg)) {
            c.subscribe(List.of(args.path("topic").asText()));
            ArrayNode got = pollUntil(c, args);
            ObjectNode o = Main.JSON.createObjectNode();
            ArrayNode assignment = o.putArray("assignment");
            c.assignment().stream().map(TopicPartition::partition).sorted().forEach(assignment::add);
            c.commitSync();
            o.set("records", got);
            return o;
        }
    }
}
