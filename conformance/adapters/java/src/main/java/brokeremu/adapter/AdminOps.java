package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DeleteRecordsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * The admin steps with a server-side deadline: create_topics (CreateTopicsOptions.timeoutMs is
 * both the call's deadline and CreateTopics' timeout_ms, which a KRaft controller makes its own)
 * and delete_records (DeleteRecordsOptions.timeoutMs: DeleteRecords' timeout_ms, how long the
 * broker's purgatory may hold it).
 */
final class AdminOps {
    private AdminOps() {
    }

    static ObjectNode createTopics(Run run, JsonNode args, Long timeoutMs) {
        try (Admin admin = run.admin(null)) {
            CreateTopicsOptions options = new CreateTopicsOptions();
            if (timeoutMs != null) {
                options.timeoutMs((int) Math.min(Integer.MAX_VALUE, timeoutMs));
            }
            NewTopic topic = new NewTopic(args.path("topic").asText(), args.path("partitions").asInt(1),
                    (short) args.path("replication_factor").asInt(1));
            long start = System.nanoTime();
            try {
                admin.createTopics(List.of(topic), options).all().get();
            } catch (Exception e) {
                return Outcomes.failed("create_topics", Outcomes.elapsedMs(start), e);
            } finally {
                admin.close(Duration.ZERO);
            }
            return Outcomes.ok("create_topics", Outcomes.elapsedMs(start), null);
        }
    }

    static ObjectNode deleteRecords(Run run, JsonNode args, Long timeoutMs) {
        try (Admin admin = run.admin(null)) {
            DeleteRecordsOptions options = new DeleteRecordsOptions();
            if (timeoutMs != null) {
                options.timeoutMs((int) Math.min(Integer.MAX_VALUE, timeoutMs));
            }
            TopicPartition tp = new TopicPartition(args.path("topic").asText(), args.path("partition").asInt(0));
            long start = System.nanoTime();
            try {
                long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(args.path("offset").asLong(-1))), options)
                        .lowWatermarks().get(tp).get().lowWatermark();
                return Outcomes.ok("delete_records", Outcomes.elapsedMs(start), Main.JSON.getNodeFactory().numberNode(low));
            } catch (Exception e) {
                return Outcomes.failed("delete_records", Outcomes.elapsedMs(start), e);
            } finally {
                admin.close(Duration.ZERO);
            }
        }
    }
}
