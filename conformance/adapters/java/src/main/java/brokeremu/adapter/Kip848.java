package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

/**
 * KIP-848 steps (the run's config carries group.protocol=consumer): the same as the Python
 * adapters' (conformance/adapters/confluent_kip848.py). Times in args are already scaled, in ms.
 */
final class Kip848 {
    private static final Duration TICK = Duration.ofMillis(20);

    private Kip848() {
    }

    private static boolean untilAssigned(KafkaConsumer<byte[], byte[]> c, long limitMs) {
        long end = System.nanoTime() + limitMs * 1_000_000L;
        while (c.assignment().isEmpty() && System.nanoTime() < end) {
            c.poll(TICK);
        }
        return !c.assignment().isEmpty();
    }

    /** Join, then poll for run_ms: the heartbeats' spacing is read from the trace. */
    static ObjectNode heartbeats(Run run, JsonNode args, Long timeoutMs) {
        long start = System.nanoTime();
        try (KafkaConsumer<byte[], byte[]> c = run.consumer(args.path("group").asText("k848-hb"), null)) {
            c.subscribe(List.of(args.path("topic").asText("t")));
            if (!untilAssigned(c, timeoutMs == null ? 30_000 : timeoutMs)) {
                return Outcomes.failed("kip848_heartbeats", Outcomes.elapsedMs(start), new Exception("never assigned"));
            }
            long end = System.nanoTime() + args.path("run_ms").asLong(1_000) * 1_000_000L;
            while (System.nanoTime() < end) {
                c.poll(TICK);
            }
            return Outcomes.ok("kip848_heartbeats", Outcomes.elapsedMs(start), null);
        } catch (Exception e) {
            return Outcomes.failed("kip848_heartbeats", Outcomes.elapsedMs(start), e);
        }
    }

    /** Join, stop polling for stall_ms, poll again: timed, getting the partitions back. */
    static ObjectNode latePoll(Run run, JsonNode args, Long timeoutMs) {
        long start = System.nanoTime();
        long limit = timeoutMs == null ? 30_000 : timeoutMs;
        try (KafkaConsumer<byte[], byte[]> c = run.consumer(args.path("group").asText("k848-late"), null)) {
            c.subscribe(List.of(args.path("topic").asText("t")));
            untilAssigned(c, limit);
            Thread.sleep(args.path("stall_ms").asLong(3_000));   // the application is busy
            start = System.nanoTime();
            boolean ok = untilAssigned(c, limit);
            return ok ? Outcomes.ok("kip848_late_poll", Outcomes.elapsedMs(start), null)
                    : Outcomes.failed("kip848_late_poll", Outcomes.elapsedMs(start), new Exception("never assigned again"));
        } catch (Exception e) {
            return Outcomes.failed("kip848_late_poll", Outcomes.elapsedMs(start), e);
        }
    }

    /** The other member of a two-member step: client.id SILENT_MEMBER (conformance/model.py). */
    private static ObjectNode silent() {
        ObjectNode extra = Main.JSON.createObjectNode();
        extra.put("client.id", "conformance-silent-member");
        return extra;
    }

    private static boolean until(BooleanSupplier done, long limitMs, List<KafkaConsumer<byte[], byte[]>> polled) {
        long end = System.nanoTime() + limitMs * 1_000_000L;
        while (!done.getAsBoolean() && System.nanoTime() < end) {
            for (KafkaConsumer<byte[], byte[]> c : polled) {
                c.poll(TICK);
            }
        }
        return done.getAsBoolean();
    }

    /**
     * A first member (its own JVM, client.id SILENT_MEMBER) owns the topic, the measured one joins
     * and they split it; then the first is killed — no leave heartbeat, so only the broker's
     * session timer can free its partitions. Timed from the kill until the measured member owns all.
     */
    static ObjectNode memberCrash(Run run, JsonNode args, Long timeoutMs) {
        String group = args.path("group").asText("k848"), topic = args.path("topic").asText("t");
        long limit = timeoutMs == null ? 60_000 : timeoutMs;
        long start = System.nanoTime();
        Process first = null;
        try (KafkaConsumer<byte[], byte[]> measured = run.consumer(group, null)) {
            String jar = Path.of(Member.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
            String java = ProcessHandle.current().info().command().orElse("java");
            first = new ProcessBuilder(java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", jar,
                    "brokeremu.adapter.Member", run.bootstrap, "conformance-silent-member", group, topic,
                    Main.JSON.writeValueAsString(run.config))
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            BufferedReader lines = new BufferedReader(new InputStreamReader(first.getInputStream(), StandardCharsets.UTF_8));
            int total = 0;
            for (String line; total == 0 && (line = lines.readLine()) != null; ) {
                total = Integer.parseInt(line.trim());
            }
            if (total == 0) {
                return Outcomes.failed("kip848_member_crash", Outcomes.elapsedMs(start), new Exception("the first member never joined"));
            }
            int all = total;
            measured.subscribe(List.of(topic));
            if (!until(() -> !measured.assignment().isEmpty() && measured.assignment().size() < all, limit, List.of(measured))) {
                return Outcomes.failed("kip848_member_crash", Outcomes.elapsedMs(start), new Exception("the group never split"));
            }
            first.destroyForcibly().waitFor();
            start = System.nanoTime();
            boolean ok = until(() -> measured.assignment().size() == all, limit, List.of(measured));
            double elapsed = Outcomes.elapsedMs(start);
            if (!ok) {
                return Outcomes.failed("kip848_member_crash", elapsed, new Exception("the crashed member's partitions never moved"));
            }
            ObjectNode value = Main.JSON.createObjectNode();
            value.put("partitions", all);
            value.put("takeover_ms", Math.round(elapsed * 10) / 10.0);
            return Outcomes.ok("kip848_member_crash", elapsed, value);
        } catch (Exception e) {
            return Outcomes.failed("kip848_member_crash", Outcomes.elapsedMs(start), e);
        } finally {
            if (first != null) {
                first.destroyForcibly();
            }
        }
    }

    /**
     * A first member whose onPartitionsRevoked takes revoke_ms owns the topic (polled on its own
     * thread, as an application would); the measured member joins. Timed from its subscribe until
     * it owns every partition: when the broker fences the slow member at its rebalance timeout.
     */
    static ObjectNode slowRevoke(Run run, JsonNode args, Long timeoutMs) {
        String group = args.path("group").asText("k848-slow"), topic = args.path("topic").asText("t");
        long limit = timeoutMs == null ? 60_000 : timeoutMs;
        long revokeMs = args.path("revoke_ms").asLong(4_000);
        long start = System.nanoTime();
        AtomicBoolean stop = new AtomicBoolean();
        int[] total = {0};
        Thread slow = new Thread(() -> {
            try (KafkaConsumer<byte[], byte[]> first = run.consumer(group, silent())) {
                first.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                        if (!partitions.isEmpty() && !stop.get()) {
                            try {
                                Thread.sleep(revokeMs);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        }
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    }
                });
                while (!stop.get()) {
                    first.poll(TICK);
                    synchronized (total) {
                        total[0] = Math.max(total[0], first.assignment().size());
                    }
                }
            } catch (KafkaException e) {
                // fenced or closed while stopping: the measured member's outcome tells the story
            }
        }, "slow-member");
        slow.setDaemon(true);
        slow.start();
        try (KafkaConsumer<byte[], byte[]> measured = run.consumer(group, null)) {
            long end = System.nanoTime() + limit * 1_000_000L;
            while (System.nanoTime() < end) {
                synchronized (total) {
                    if (total[0] > 0) {
                        break;
                    }
                }
                Thread.sleep(20);
            }
            int all;
            synchronized (total) {
                all = total[0];
            }
            if (all == 0) {
                return Outcomes.failed("kip848_slow_revoke", Outcomes.elapsedMs(start), new Exception("the first member never joined"));
            }
            measured.subscribe(List.of(topic));
            start = System.nanoTime();
            boolean ok = until(() -> measured.assignment().size() == all, limit, List.of(measured));
            return ok ? Outcomes.ok("kip848_slow_revoke", Outcomes.elapsedMs(start), null)
                    : Outcomes.failed("kip848_slow_revoke", Outcomes.elapsedMs(start),
                                      new Exception("the slow member's partitions never moved"));
        } catch (Exception e) {
            return Outcomes.failed("kip848_slow_revoke", Outcomes.elapsedMs(start), e);
        } finally {
            stop.set(true);
            try {
                slow.join(limit);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * A member commits every every_ms for run_ms while a second one joins (the scenario delays
     * every heartbeat answer); the first refused commit is the outcome.
     */
    static ObjectNode staleCommit(Run run, JsonNode args, Long timeoutMs) {
        String group = args.path("group").asText("k848-stale"), topic = args.path("topic").asText("t");
        long limit = timeoutMs == null ? 60_000 : timeoutMs;
        long every = args.path("every_ms").asLong(500);
        long runMs = Math.min(limit, args.path("run_ms").asLong(1_000));
        long start = System.nanoTime();
        int commits = 0;
        try (KafkaConsumer<byte[], byte[]> a = run.consumer(group, null);
             KafkaConsumer<byte[], byte[]> b = run.consumer(group, silent())) {
            a.subscribe(List.of(topic));
            untilAssigned(a, limit);
            b.subscribe(List.of(topic));
            start = System.nanoTime();
            while (Outcomes.elapsedMs(start) < runMs) {
                long end = System.nanoTime() + every * 1_000_000L;
                while (System.nanoTime() < end) {
                    a.poll(TICK);
                    b.poll(Duration.ZERO);
                }
                Map<TopicPartition, OffsetAndMetadata> owned = new HashMap<>();
                for (TopicPartition tp : a.assignment()) {
                    owned.put(tp, new OffsetAndMetadata(0));
                }
                if (owned.isEmpty()) {
                    continue;
                }
                try {
                    a.commitSync(owned);
                    commits++;
                } catch (KafkaException e) {   // CommitFailedException and the rest
                    ObjectNode failed = Outcomes.failed("kip848_stale_commit", Outcomes.elapsedMs(start), e);
                    failed.set("value", Main.JSON.createObjectNode().put("commits_before", commits));
                    return failed;
                }
            }
            return Outcomes.ok("kip848_stale_commit", Outcomes.elapsedMs(start),
                               Main.JSON.createObjectNode().put("commits_before", commits));
        } catch (Exception e) {
            return Outcomes.failed("kip848_stale_commit", Outcomes.elapsedMs(start), e);
        }
    }

    /**
     * Two members; the scenario stops the group coordinator's broker when the first is asked to
     * revoke for the second. Timed: from the second's subscribe until the two hold the topic.
     */
    static ObjectNode coordinatorDies(Run run, JsonNode args, Long timeoutMs) {
        String group = args.path("group").asText("k848-move"), topic = args.path("topic").asText("t");
        long limit = timeoutMs == null ? 60_000 : timeoutMs;
        long start = System.nanoTime();
        try (KafkaConsumer<byte[], byte[]> first = run.consumer(group, silent());
             KafkaConsumer<byte[], byte[]> second = run.consumer(group, null)) {
            first.subscribe(List.of(topic));
            if (!untilAssigned(first, limit)) {
                return Outcomes.failed("kip848_coordinator_dies", Outcomes.elapsedMs(start), new Exception("the first member never joined"));
            }
            int total = first.assignment().size();
            second.subscribe(List.of(topic));
            start = System.nanoTime();
            boolean ok = until(() -> first.assignment().size() + second.assignment().size() == total
                    && !first.assignment().isEmpty() && !second.assignment().isEmpty(), limit, List.of(first, second));
            return ok ? Outcomes.ok("kip848_coordinator_dies", Outcomes.elapsedMs(start), null)
                    : Outcomes.failed("kip848_coordinator_dies", Outcomes.elapsedMs(start),
                                      new Exception("the group never settled on the new coordinator"));
        } catch (Exception e) {
            return Outcomes.failed("kip848_coordinator_dies", Outcomes.elapsedMs(start), e);
        }
    }
}
