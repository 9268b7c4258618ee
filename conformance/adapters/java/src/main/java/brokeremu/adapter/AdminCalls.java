package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * "admin_calls": every Admin method of kafka-clients that maps to the emulator's admin APIs, in
 * one script on a fresh topic, each answer (or its exception's class) recorded under the call's
 * name, so tests/realclients/test_java_admin.py can compare the emulator with Kafka itself.
 * (Admin.alterConfigs, the legacy AlterConfigs call, left the Java client in Kafka 4.0.)
 */
final class AdminCalls {
    private AdminCalls() {
    }

    interface Call {
        Object run() throws Exception;
    }

    /**
     * A read after a write, retried for up to 5 s until {@code done}: Kafka's brokers apply the
     * controller's metadata (configs, quotas, ACLs, SCRAM credentials) a moment after the write
     * was acknowledged, so a describe at once may still see the old state (measured on Kafka 4.4).
     */
    static <T> T eventually(Call body, java.util.function.Predicate<Object> done) throws Exception {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (true) {
            Object value;
            try {
                value = body.run();
            } catch (Exception e) {   // e.g. a SCRAM user not yet known to the broker asked
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
                continue;
            }
            if (done.test(value) || System.nanoTime() > deadline) {
                @SuppressWarnings("unchecked") T result = (T) value;
                return result;
            }
            Thread.sleep(100);
        }
    }

    private static void call(ObjectNode out, String name, Call body) {
        Object value;
        try {
            value = body.run();
        } catch (Exception e) {
            Throwable cause = e.getCause() != null && e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
            value = "error: " + cause.getClass().getSimpleName();
        }
        out.set(name, Main.JSON.valueToTree(value));
    }

    static JsonNode all(Run run, JsonNode args, JsonNode cfg) throws Exception {
        String topic = args.path("topic").asText("jadm");
        String group = args.path("group").asText("jadm-g");
        int broker = args.path("broker").asInt(0);
        TopicPartition tp0 = new TopicPartition(topic, 0);
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        ObjectNode out = Main.JSON.createObjectNode();
        try (Admin a = run.admin(cfg)) {
            call(out, "createTopics", () -> {
                a.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
                return "ok";
            });
            call(out, "produce", () -> {
                try (KafkaProducer<byte[], byte[]> p = run.producer(cfg)) {
                    for (int i = 0; i < 5; i++) {
                        p.send(new ProducerRecord<>(topic, 0, null, ("v" + i).getBytes())).get();
                    }
                }
                return 5;
            });
            call(out, "commitOffsets", () -> {
                try (KafkaConsumer<byte[], byte[]> c = run.consumer(group, cfg)) {
                    c.commitSync(Map.of(tp0, new OffsetAndMetadata(3)));
                }
                return 3;
            });
            call(out, "createPartitions", () -> {
                a.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get();
                return a.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
            });
            call(out, "incrementalAlterConfigs", () -> {
                a.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                        new ConfigEntry("retention.ms", "123456"), AlterConfigOp.OpType.SET)))).all().get();
                return "ok";
            });
            call(out, "describeConfigs", () -> eventually(() -> {
                Config config = a.describeConfigs(List.of(resource)).all().get().get(resource);
                ConfigEntry entry = config.get("retention.ms");
                return entry.value() + " " + entry.source();
            }, v -> String.valueOf(v).startsWith("123456")));
            call(out, "deleteRecords", () -> a.deleteRecords(Map.of(tp0, RecordsToDelete.beforeOffset(2)))
                    .lowWatermarks().get(tp0).get().lowWatermark());
            call(out, "listConsumerGroupOffsets", () -> a.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get().get(tp0).offset());
            call(out, "deleteConsumerGroupOffsets", () -> {
                a.deleteConsumerGroupOffsets(group, Set.of(tp0)).all().get();
                return a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().size();
            });
            call(out, "deleteConsumerGroups", () -> {
                a.deleteConsumerGroups(List.of(group)).all().get();
                return "ok";
            });
            call(out, "electLeaders", () -> {
                Map<TopicPartition, Optional<Throwable>> r = a.electLeaders(ElectionType.PREFERRED, Set.of(tp0))
                        .partitions().get();
                return r.get(tp0).map(t -> t.getClass().getSimpleName()).orElse("elected");
            });
            call(out, "describeLogDirs", () -> {
                var dirs = a.describeLogDirs(List.of(broker)).allDescriptions().get().get(broker);
                return dirs.values().stream().mapToLong(d -> d.replicaInfos().keySet().stream()
                        .filter(p -> p.topic().equals(topic)).count()).sum();
            });
            call(out, "alterPartitionReassignments", () -> {
                a.alterPartitionReassignments(Map.of(tp0, Optional.of(new NewPartitionReassignment(List.of(broker)))))
                        .all().get();
                return "ok";
            });
            call(out, "listPartitionReassignments", () -> a.listPartitionReassignments(Set.of(tp0)).reassignments()
                    .get().size());
            ClientQuotaEntity user = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, "jadm-user"));
            call(out, "alterClientQuotas", () -> {
                a.alterClientQuotas(List.of(new ClientQuotaAlteration(user, List.of(
                        new ClientQuotaAlteration.Op("producer_byte_rate", 1024.0))))).all().get();
                return "ok";
            });
            call(out, "describeClientQuotas", () -> eventually(() -> new TreeMap<>(a.describeClientQuotas(
                    ClientQuotaFilter.all()).entities().get().getOrDefault(user, Map.of())), v -> !((Map<?, ?>) v).isEmpty()));
            AclBinding acl = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                    new AccessControlEntry("User:jadm-user", "*", AclOperation.READ, AclPermissionType.ALLOW));
            AclBindingFilter forTopic = new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL), AccessControlEntryFilter.ANY);
            call(out, "createAcls", () -> {
                a.createAcls(List.of(acl)).all().get();
                return "ok";
            });
            call(out, "describeAcls", () -> eventually(() -> a.describeAcls(forTopic).values().get().size(),
                    v -> (Integer) v > 0));
            call(out, "deleteAcls", () -> a.deleteAcls(List.of(forTopic)).all().get().size());
            call(out, "alterUserScramCredentials", () -> {
                a.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("jadm-user",
                        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "pw"))).all().get();
                return "ok";
            });
            call(out, "describeUserScramCredentials", () -> eventually(() -> a.describeUserScramCredentials(
                    List.of("jadm-user")).description("jadm-user").get().credentialInfos().get(0).iterations(), v -> true));
            call(out, "deleteTopics", () -> {
                a.deleteTopics(List.of(topic)).all().get();
                return "ok";
            });
        }
        return out;
    }
}
