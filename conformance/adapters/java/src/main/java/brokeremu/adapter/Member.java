package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.consumer.KafkaConsumer;

import java.time.Duration;
import java.util.List;

/**
 * A group member in a process of its own, for steps that must crash one (the parent kills it:
 * no leave, no close, as a real crash). Arguments: bootstrap, client id, group, topic, the run's
 * config as JSON. Prints its assignment's size on stdout whenever it changes.
 */
public final class Member {
    private Member() {
    }

    public static void main(String[] args) throws Exception {
        JsonNode config = Main.JSON.readTree(args[4]);
        Run run = new Run(args[0], args[1], config);
        try (KafkaConsumer<byte[], byte[]> c = run.consumer(args[2], null)) {
            c.subscribe(List.of(args[3]));
            int last = -1;
            while (true) {
                c.poll(Duration.ofMillis(20));
                int now = c.assignment().size();
                if (now != last) {
                    System.out.println(now);
                    System.out.flush();
                    last = now;
                }
            }
        }
    }
}
