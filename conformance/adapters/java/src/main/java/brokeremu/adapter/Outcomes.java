package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Base64;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** Outcome lines: {"operation", "ok", "elapsed_ms", "error_type", "error_message", "value"}. */
final class Outcomes {
    private Outcomes() {
    }

    static double elapsedMs(long startNanos) {
        return (System.nanoTime() - startNanos) / 1e6;
    }

    static ObjectNode ok(String operation, double elapsedMs, JsonNode value) {
        ObjectNode o = Main.JSON.createObjectNode();
        o.put("operation", operation);
        o.put("ok", true);
        o.put("elapsed_ms", elapsedMs);
        o.set("value", value == null ? Main.JSON.getNodeFactory().nullNode() : value);
        return o;
    }

    /** The client's own exception: ExecutionException and CompletionException are only wrappers. */
    static Throwable unwrap(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    static ObjectNode failed(String operation, double elapsedMs, Throwable t) {
        Throwable e = unwrap(t);
        ObjectNode o = Main.JSON.createObjectNode();
        o.put("operation", operation);
        o.put("ok", false);
        o.put("elapsed_ms", elapsedMs);
        o.put("error_type", e.getClass().getSimpleName());
        o.put("error_message", String.valueOf(e.getMessage()));
        o.putNull("value");
        return o;
    }

    static JsonNode bytes(byte[] b) {
        if (b == null) {
            return Main.JSON.getNodeFactory().nullNode();
        }
        ObjectNode o = Main.JSON.createObjectNode();
        o.put("$bytes", Base64.getEncoder().encodeToString(b));
        return o;
    }

    /** A record value or key in the request: {"$bytes": base64}, a string, or null. */
    static byte[] argBytes(JsonNode node) {
        if (node == null || node.isNull() || node.isMissingNode()) {
            return null;
        }
        if (node.has("$bytes")) {
            return Base64.getDecoder().decode(node.get("$bytes").asText());
        }
        return node.asText().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
}
