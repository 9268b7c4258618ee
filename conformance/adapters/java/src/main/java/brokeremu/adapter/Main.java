package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Properties;

/**
 * The Apache Kafka Java client behind the conformance suite's line protocol (version 1, see
 * conformance/adapters/line_protocol.py): one JSON request a line on stdin, one JSON answer a
 * line on stdout. Everything else (the client's own logging) goes to stderr.
 */
public final class Main {
    static final ObjectMapper JSON = new ObjectMapper();

    private Main() {
    }

    public static void main(String[] args) throws Exception {
        // stdout carries the protocol only: anything else that prints goes to stderr
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer;
            try {
                JsonNode request = JSON.readTree(line);
                String cmd = request.path("cmd").asText();
                if (cmd.equals("quit")) {
                    break;
                }
                answer = switch (cmd) {
                    case "hello" -> hello();
                    case "run" -> run(request);
                    default -> ChaosTxn.handles(cmd) ? ChaosTxn.handle(cmd, request)
                            : Chaos.handles(cmd) ? Chaos.handle(cmd, request) : fatal("unknown cmd " + cmd);
                };
            } catch (Exception e) {   // a broken request: say so, keep serving
                answer = fatal(e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            out.println(JSON.writeValueAsString(answer));
        }
        out.flush();
        System.exit(0);   // the clients' daemon threads must not keep the JVM alive
    }

    static ObjectNode fatal(String message) {
        ObjectNode node = JSON.createObjectNode();
        node.put("fatal", message);
        return node;
    }

    static String kafkaVersion() {
        Properties props = new Properties();
        try (InputStream in = Main.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                props.load(in);
            }
        } catch (java.io.IOException ignored) {
            // unknown version: reported as such
        }
        return props.getProperty("version", "unknown");
    }

    static ObjectNode hello() {
        ObjectNode node = JSON.createObjectNode();
        node.put("client", "apache-kafka-java");
        node.put("version", kafkaVersion());
        ArrayNode ops = node.putArray("operations");
        Ops.OPERATIONS.forEach(ops::add);
        ArrayNode extras = node.putArray("extras");
        Extras.ALL.forEach(extras::add);
        ObjectNode settings = node.putObject("settings");
        settings.put("request_timeout", "request.timeout.ms (NetworkClient: per request, then the connection is closed)");
        settings.put("delivery_timeout", "delivery.timeout.ms (RecordAccumulator / Sender: the record's whole life)");
        settings.put("max_block", "max.block.ms (KafkaProducer.send waiting for metadata or buffer space)");
        settings.put("api_timeout", "the Duration of each consumer call, else default.api.timeout.ms");
        settings.put("admin_timeout", "ListTopicsOptions.timeoutMs, else the admin's default.api.timeout.ms");
        return node;
    }

    static ObjectNode run(JsonNode request) {
        Run run = new Run(request.path("bootstrap").asText(), request.path("client_id").asText("java-adapter"),
                request.path("config"));
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode outcomes = answer.putArray("outcomes");
        for (JsonNode step : request.path("steps")) {
            String kind = step.path("kind").asText();
            JsonNode args = step.path("args");
            Long timeoutMs = step.hasNonNull("timeout_ms") ? step.get("timeout_ms").asLong() : null;
            ObjectNode outcome;
            try {
                outcome = Ops.OPERATIONS.contains(kind) ? Ops.perform(run, kind, args, timeoutMs)
                        : Extras.perform(run, kind, args, timeoutMs);
            } catch (Exception e) {   // the adapter itself broke: still an outcome, named as such
                outcome = Outcomes.failed(kind, 0, e);
            }
            outcomes.add(outcome);
        }
        return answer;
    }
}
