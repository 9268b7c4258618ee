package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.KafkaConsumer;

import java.time.Duration;
import java.util.List;

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
}
