package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.TimeoutException;

import java.time.Duration;
import java.util.List;

/**
 * join_group_held (scenario server.joingroup-held), as the other adapters run it: a first member
 * (client.id SILENT_MEMBER, whose Heartbeats the scenario black-holes) subscribes and is polled
 * until it owns partitions, then is polled no more but stays open; a second member subscribes.
 * Timed: from the second member's subscribe until it owns partitions, polled a tick at a time.
 *
 * <p>Both are classic-protocol members (JoinGroup/SyncGroup/Heartbeat, ClassicKafkaConsumer's
 * ConsumerCoordinator). The coordinator holds the second member's JoinGroup until the first is
 * expelled at session.timeout.ms; Java reads that JoinGroup for max(request.timeout.ms,
 * rebalance timeout + AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE, 5 s), the rebalance timeout
 * being max.poll.interval.ms (AbstractCoordinator.sendJoinGroupRequest). The first member's
 * heartbeat thread keeps heartbeating into the black hole without polls, and only a poll would
 * make it rejoin; it leaves on its own at max.poll.interval.ms, longer than the session.
 *
 * <p>Under group.protocol=consumer (KIP-848: AsyncKafkaConsumer, whose membership is
 * ConsumerGroupHeartbeat) the client sends no JoinGroup at all, so the step refuses to run there
 * rather than time something else.
 */
final class JoinGroupHeld {
    static final String KIND = "join_group_held";
    private static final Duration TICK = Duration.ofMillis(20);

    private JoinGroupHeld() {
    }

    private static boolean untilAssigned(KafkaConsumer<byte[], byte[]> c, long limitMs) {
        long end = System.nanoTime() + limitMs * 1_000_000L;
        while (c.assignment().isEmpty() && System.nanoTime() < end) {
            c.poll(TICK);
        }
        return !c.assignment().isEmpty();
    }

    static ObjectNode run(Run run, JsonNode args, Long timeoutMs) {
        String protocol = run.config.path("group.protocol").asText("classic");
        if (!protocol.equalsIgnoreCase("classic")) {
            return Outcomes.failed(KIND, 0, new IllegalArgumentException(
                    "join_group_held is a classic-protocol step: under group.protocol=" + protocol + " no JoinGroup is sent"));
        }
        String group = args.path("group").asText("held"), topic = args.path("topic").asText("t");
        long limit = timeoutMs == null ? 60_000 : timeoutMs;
        ObjectNode silent = Main.JSON.createObjectNode().put("client.id", "conformance-silent-member");
        KafkaConsumer<byte[], byte[]> first = run.consumer(group, silent);
        KafkaConsumer<byte[], byte[]> second = null;
        long start = System.nanoTime();
        try {
            first.subscribe(List.of(topic));
            if (!untilAssigned(first, limit)) {
                return Outcomes.failed(KIND, 0, new TimeoutException(
                        "the first member never got an assignment"));
            }
            second = run.consumer(group, null);
            start = System.nanoTime();
            second.subscribe(List.of(topic));
            if (!untilAssigned(second, limit)) {
                return Outcomes.failed(KIND, Outcomes.elapsedMs(start), new TimeoutException(
                        "the second member never got an assignment"));
            }
            return Outcomes.ok(KIND, Outcomes.elapsedMs(start), null);
        } catch (Exception e) {
            return Outcomes.failed(KIND, Outcomes.elapsedMs(start), e);
        } finally {   // not close()'s 30 s: the silent member's coordinator may be unreachable by now
            if (second != null) {
                second.close(CloseOptions.timeout(Ops.CLOSE_AFTER_STEP));
            }
            first.close(CloseOptions.timeout(Ops.CLOSE_AFTER_STEP));
        }
    }
}
