package brokeremu.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code txn_error_probe} (conformance/adapters/txn_probe.py, the same sequence): a transaction
 * under a fault that answers one error; the first call that fails is recorded; once the fault is
 * over (clear_s after the start, scaled by the Python side) the same call again, then
 * abortTransaction, then a new transaction. The harness reads the class from what followed.
 */
final class TxnProbe {
    private TxnProbe() {
    }

    interface Call {
        void run() throws Exception;
    }

    /** The exception's class, and its cause's when the client wrapped one (KafkaException around the error). */
    static String name(Throwable t) {
        Throwable e = Outcomes.unwrap(t);
        Throwable cause = e.getCause();
        String own = e.getClass().getSimpleName();
        return cause != null && cause != e ? own + " (cause " + cause.getClass().getSimpleName() + ")" : own;
    }

    private static String attempt(Map<String, Call> calls, String... keys) {
        for (String key : keys) {
            try {
                calls.get(key).run();
            } catch (Exception e) {
                return name(e);
            }
        }
        return "ok";
    }

    static ObjectNode probe(Run run, JsonNode args) {
        ObjectNode extra = Main.JSON.createObjectNode();
        extra.put("transactional.id", run.clientId + "-tx");
        extra.put("enable.idempotence", "true");
        extra.put("client.id", run.clientId);
        KafkaProducer<byte[], byte[]> p = run.producer(extra);
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(args.path("topic").asText(),
                args.path("partition").asInt(0), null, "txn".getBytes());
        Map<String, Call> calls = new LinkedHashMap<>();
        calls.put("init", p::initTransactions);
        calls.put("begin", p::beginTransaction);
        calls.put("send", () -> p.send(record).get(60, TimeUnit.SECONDS));
        calls.put("commit", p::commitTransaction);
        calls.put("abort", p::abortTransaction);
        long t0 = System.nanoTime();
        ObjectNode took = Main.JSON.createObjectNode();
        try {
            String failed = null;
            Exception error = null;
            double after = 0;
            for (String key : new String[]{"init", "begin", "send", "commit"}) {
                long start = System.nanoTime();
                try {
                    calls.get(key).run();
                } catch (Exception e) {
                    failed = key;
                    error = e;
                    after = Outcomes.elapsedMs(start);
                }
                took.put(key, Outcomes.elapsedMs(start) / 1000);
                if (failed != null) {
                    break;
                }
            }
            ObjectNode value = Main.JSON.createObjectNode();
            value.set("took", took);
            if (failed == null) {
                String slowest = "init";
                for (var it = took.fieldNames(); it.hasNext(); ) {
                    String k = it.next();
                    if (took.get(k).asDouble() > took.get(slowest).asDouble()) {
                        slowest = k;
                    }
                }
                value.putNull("call");
                value.put("slowest", slowest);
                return Outcomes.ok("txn_error_probe", took.get(slowest).asDouble() * 1000, value);
            }
            long clearAt = t0 + (long) (args.path("clear_s").asDouble(0) * 1e9);
            Thread.sleep(Math.max(0, (clearAt - System.nanoTime()) / 1_000_000));
            String retry = attempt(calls, failed.equals("init") ? "init" : "commit");
            String abort = null;
            String next = null;
            if (!failed.equals("init") && !retry.equals("ok")) {
                abort = attempt(calls, "abort");
            }
            if ((failed.equals("init") && retry.equals("ok")) || "ok".equals(abort)) {
                next = attempt(calls, "begin", "send", "commit");
            }
            value.put("call", failed);
            value.put("retry", retry);
            value.put("abort", abort);
            value.put("next", next);
            ObjectNode out = Outcomes.failed("txn_error_probe", after, error);
            out.put("error_type", name(error));
            out.set("value", value);
            return out;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Outcomes.failed("txn_error_probe", Outcomes.elapsedMs(t0), e);
        } finally {
            p.close(java.time.Duration.ZERO);
        }
    }
}
