package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * "share_admin": Admin's share-group offset calls of kafka-clients 4.4 (KIP-932:
 * listShareGroupOffsets, alterShareGroupOffsets, deleteShareGroupOffsets) as a script of
 * {"op": "list" | "alter" | "delete", ...} steps, each answer (or its exception's class)
 * recorded in order, for tests/realclients/test_share_admin.py. A listed partition is
 * [start offset, leader epoch or -1, lag or -1], or null when it has no start offset yet.
 */
final class ShareAdmin {
    private ShareAdmin() {
    }

    interface Call {
        Object run() throws Exception;
    }

    static JsonNode run(Run run, JsonNode args, JsonNode cfg) throws Exception {
        String group = args.path("group").asText("sg");
        List<ObjectNode> out = new ArrayList<>();
        try (Admin a = run.admin(cfg)) {
            for (JsonNode step : args.path("steps")) {
                String g = step.path("group").asText(group);
                ObjectNode o = Main.JSON.createObjectNode();
                o.put("op", step.path("op").asText());
                Object value;
                try {
                    value = switch (step.path("op").asText()) {
                        case "list" -> list(a, g, step.get("partitions"));
                        case "alter" -> alter(a, g, step.path("offsets"));
                        case "delete" -> delete(a, g, step.path("topics"));
                        default -> throw new IllegalArgumentException("no share_admin op " + step.path("op"));
                    };
                } catch (Exception e) {
                    Throwable cause = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null
                            ? e.getCause() : e;
                    value = "error: " + cause.getClass().getSimpleName();
                }
                o.set("value", Main.JSON.valueToTree(value));
                out.add(o);
            }
        }
        return Main.JSON.valueToTree(out);
    }

    private static TopicPartition tp(String name) {
        int dash = name.lastIndexOf('-');
        return new TopicPartition(name.substring(0, dash), Integer.parseInt(name.substring(dash + 1)));
    }

    private static Object list(Admin a, String group, JsonNode partitions) throws Exception {
        ListShareGroupOffsetsSpec spec = new ListShareGroupOffsetsSpec();
        if (partitions != null && !partitions.isNull()) {
            List<TopicPartition> tps = new ArrayList<>();
            partitions.forEach(p -> tps.add(tp(p.asText())));
            spec.topicPartitions(tps);
        }
        Map<TopicPartition, SharePartitionOffsetInfo> found = a.listShareGroupOffsets(Map.of(group, spec))
                .partitionsToOffsetInfo(group).get();
        Map<String, Object> shown = new TreeMap<>();
        found.forEach((tp, info) -> shown.put(tp.toString(), info == null ? null
                : List.of(info.startOffset(), info.leaderEpoch().orElse(-1), info.lag().orElse(-1L))));
        return shown;
    }

    private static Object alter(Admin a, String group, JsonNode offsets) throws Exception {
        Map<TopicPartition, Long> wanted = new TreeMap<>(java.util.Comparator.comparing(TopicPartition::toString));
        offsets.fields().forEachRemaining(e -> wanted.put(tp(e.getKey()), e.getValue().asLong()));
        var result = a.alterShareGroupOffsets(group, wanted);
        Map<String, Object> shown = new TreeMap<>();
        for (TopicPartition tp : wanted.keySet()) {
            try {
                result.partitionResult(tp).get();
                shown.put(tp.toString(), "ok");
            } catch (java.util.concurrent.ExecutionException e) {
                shown.put(tp.toString(), "error: " + e.getCause().getClass().getSimpleName());
            }
        }
        return shown;
    }

    private static Object delete(Admin a, String group, JsonNode topics) throws Exception {
        List<String> names = new ArrayList<>();
        topics.forEach(t -> names.add(t.asText()));
        var result = a.deleteShareGroupOffsets(group, Set.copyOf(names));
        Map<String, Object> shown = new TreeMap<>();
        for (String name : names) {
            try {
                result.topicResult(name).get();
                shown.put(name, "ok");
            } catch (java.util.concurrent.ExecutionException e) {
                shown.put(name, "error: " + e.getCause().getClass().getSimpleName());
            }
        }
        return shown;
    }
}
