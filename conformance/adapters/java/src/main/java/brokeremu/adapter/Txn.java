package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TimeoutException;
import java.util.concurrent.TimeUnit;

/**
 * The transactional producer's operations for the txn scenarios: {@code transaction} (init, one
 * record, open_s open, commit; count of them; retry_commit: commit again after a
 * TimeoutException) and {@code txn_zombie} (a second instance fences the first). Timed: the call
 * that failed, else the last commit.
 */
final class Txn {
    private Txn() {
    }

    private static KafkaProducer<byte[], byte[]> producer(Run run, String clientId) {
        ObjectNode extra = Main.JSON.createObjectNode();
        extra.put("transactional.id", run.clientId + "-tx");
        extra.put("enable.idempotence", "true");
        extra.put("client.id", clientId);
        return run.producer(extra);
    }

    private static ProducerRecord<byte[], byte[]> record(JsonNode args, String value) {
        return new ProducerRecord<>(args.path("topic").asText(), args.path("partition").asInt(0), null, value.getBytes());
    }

    static ObjectNode transaction(Run run, JsonNode args) {
        KafkaProducer<byte[], byte[]> p = producer(run, run.clientId);
        // from initTransactions, not from the constructor: max.block.ms bounds the call, and building a
        // KafkaProducer on a loaded JVM took 0.3-0.55 s, which time_init's contract counted as the call's
        long start = System.nanoTime();
        try {
            p.initTransactions();
            for (int i = 0; i < args.path("count").asInt(1); i++) {
                p.beginTransaction();
                p.send(record(args, "txn")).get(30, TimeUnit.SECONDS);
                Thread.sleep((long) (args.path("open_s").asDouble(0.0) * 1000));
                start = System.nanoTime();
                p.commitTransaction();
            }
            return Outcomes.ok("transaction", Outcomes.elapsedMs(start), null);
        } catch (TimeoutException e) {
            double elapsed = Outcomes.elapsedMs(start);
            ObjectNode out = Outcomes.failed("transaction", elapsed, e);
            if (args.path("retry_commit").asBoolean(false)) {
                // each call waits max.block.ms for the same pending commit (TransactionalRequestResult)
                long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (true) {
                    try {
                        p.commitTransaction();
                        out.put("value", "committed when called again");
                        break;
                    } catch (TimeoutException again) {
                        if (System.nanoTime() > giveUp) {
                            out.put("value", "still not committed after 30 s of calls");
                            break;
                        }
                    } catch (Exception again) {
                        out.put("value", "calling commit again failed: " + again);
                        break;
                    }
                }
            }
            return out;
        } catch (Exception e) {
            return Outcomes.failed("transaction", Outcomes.elapsedMs(start), e);
        } finally {
            p.close(java.time.Duration.ZERO);
        }
    }

    /**
     * A transaction whose one record (txn-1) fails is aborted; the next writes txn-2 and
     * commits. Timed: from the abort to the commit; the value is how the first record ended
     * (null: delivered).
     */
    static ObjectNode abortThenCommit(Run run, JsonNode args) {
        KafkaProducer<byte[], byte[]> p = producer(run, run.clientId);
        long start = System.nanoTime();
        try {
            p.initTransactions();
            p.beginTransaction();
            JsonNode first = null;
            try {
                p.send(record(args, "txn-1")).get(60, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                first = Main.JSON.getNodeFactory().textNode(e.getCause().getClass().getSimpleName());
            }
            start = System.nanoTime();
            p.abortTransaction();
            p.beginTransaction();
            p.send(record(args, "txn-2")).get(60, TimeUnit.SECONDS);
            p.commitTransaction();
            return Outcomes.ok("txn_abort_then_commit", Outcomes.elapsedMs(start), first);
        } catch (Exception e) {
            return Outcomes.failed("txn_abort_then_commit", Outcomes.elapsedMs(start), e);
        } finally {
            p.close(java.time.Duration.ZERO);
        }
    }

    /**
     * The real-client check: one transaction committed (6 records over the topic's partitions
     * and offset 7 of partition 0 for the group), one aborted (6 records sent first, offset 99).
     */
    static JsonNode commitAndAbort(Run run, JsonNode args) throws Exception {
        String topic = args.path("topic").asText();
        String prefix = args.path("prefix").asText();
        String group = args.path("group").asText();
        try (KafkaProducer<byte[], byte[]> p = producer(run, run.clientId)) {
            p.initTransactions();
            for (String kind : new String[]{"c", "a"}) {
                p.beginTransaction();
                for (int i = 0; i < 6; i++) {
                    p.send(new ProducerRecord<>(topic, i % 3, null, (prefix + "-" + kind + i).getBytes())).get(30, TimeUnit.SECONDS);
                }
                java.util.Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> offsets =
                        java.util.Map.of(new org.apache.kafka.common.TopicPartition(topic, 0),
                                new org.apache.kafka.clients.consumer.OffsetAndMetadata(kind.equals("c") ? 7 : 99));
                p.sendOffsetsToTransaction(offsets, new org.apache.kafka.clients.consumer.ConsumerGroupMetadata(group));
                if (kind.equals("c")) {
                    p.commitTransaction();
                } else {
                    p.abortTransaction();
                }
            }
        }
        return null;
    }

    /**
     * A transaction left open (its producer hangs), a plain record after it; a read_committed
     * consumer polls until it sees a record. Timed: that wait; value: what it read.
     */
    static ObjectNode readCommittedBehindOpenTxn(Run run, JsonNode args, Long timeoutMs) {
        String topic = args.path("topic").asText();
        int partition = args.path("partition").asInt(0);
        ObjectNode plainConfig = Main.JSON.createObjectNode();
        plainConfig.put("client.id", run.clientId + "-plain");
        ObjectNode consumerConfig = Main.JSON.createObjectNode();
        consumerConfig.put("isolation.level", "read_committed");
        long start = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> hung = producer(run, run.clientId + "-hung");
             KafkaProducer<byte[], byte[]> plain = run.producer(plainConfig);
             org.apache.kafka.clients.consumer.KafkaConsumer<byte[], byte[]> consumer = run.consumer(null, consumerConfig)) {
            hung.initTransactions();
            hung.beginTransaction();
            hung.send(new ProducerRecord<>(topic, partition, null, "in the open transaction".getBytes())).get(30, TimeUnit.SECONDS);
            plain.send(new ProducerRecord<>(topic, partition, null, "after it".getBytes())).get(30, TimeUnit.SECONDS);
            org.apache.kafka.common.TopicPartition tp = new org.apache.kafka.common.TopicPartition(topic, partition);
            consumer.assign(java.util.List.of(tp));
            consumer.seekToBeginning(java.util.List.of(tp));
            start = System.nanoTime();
            long giveUp = start + TimeUnit.MILLISECONDS.toNanos(timeoutMs == null ? 60_000 : timeoutMs);
            com.fasterxml.jackson.databind.node.ArrayNode seen = Main.JSON.createArrayNode();
            while (seen.isEmpty() && System.nanoTime() < giveUp) {
                consumer.poll(java.time.Duration.ofMillis(50)).forEach(r -> seen.add(Outcomes.bytes(r.value())));
            }
            if (seen.isEmpty()) {
                ObjectNode o = Outcomes.failed("read_committed_behind_open_txn", Outcomes.elapsedMs(start),
                        new TimeoutException("no record became visible"));
                return o;
            }
            return Outcomes.ok("read_committed_behind_open_txn", Outcomes.elapsedMs(start), seen);
        } catch (Exception e) {
            return Outcomes.failed("read_committed_behind_open_txn", Outcomes.elapsedMs(start), e);
        }
    }

    static ObjectNode zombie(Run run, JsonNode args) {
        long start = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> zombie = producer(run, run.clientId);
             KafkaProducer<byte[], byte[]> fresh = producer(run, run.clientId + "-new")) {
            zombie.initTransactions();
            zombie.beginTransaction();
            zombie.send(record(args, "zombie")).get(30, TimeUnit.SECONDS);
            fresh.initTransactions();
            fresh.beginTransaction();
            fresh.send(record(args, "fresh")).get(30, TimeUnit.SECONDS);
            fresh.commitTransaction();
            start = System.nanoTime();
            try {
                zombie.commitTransaction();
                return Outcomes.ok("txn_zombie", Outcomes.elapsedMs(start), null);
            } catch (Exception e) {
                return Outcomes.failed("txn_zombie", Outcomes.elapsedMs(start), e);
            }
        } catch (Exception e) {
            return Outcomes.failed("txn_zombie", Outcomes.elapsedMs(start), e);
        }
    }
}
