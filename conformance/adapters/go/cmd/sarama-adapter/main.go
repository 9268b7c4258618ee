// Command sarama-adapter drives IBM's sarama (github.com/IBM/sarama) through the conformance
// suite's line protocol (conformance/adapters/line_protocol.py). Each step builds its own
// sarama client from the run's config (mapped in config.go) and is timed around sarama's own
// call. sarama's calls take no deadline (no context): only its network timeouts and retry
// counts bound them.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"brokeremu/goadapters/internal/lineproto"
)

// Operations are the conformance operations (conformance/adapters/base.py) this program maps.
var Operations = []string{"produce", "produce_pipelined", "configure_producer", "poll", "committed",
	"end_offsets", "beginning_offsets", "offsets_for_times", "list_topics", "partitions_for", "commit_sync",
	"close", "admin_list_topics", "transaction", "txn_zombie", "txn_abort_then_commit", "read_committed_behind_open_txn", "txn_error_probe",
	"create_topics", "delete_records", "join_group_held"}

type saramaClient struct{}

func main() {
	sarama.Logger = newStderrLogger()
	lineproto.Main(saramaClient{})
}

func version() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/IBM/sarama" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func (saramaClient) Hello() map[string]any {
	return map[string]any{
		"client": "sarama", "version": version(), "go": strings.TrimPrefix(runtime.Version(), "go"),
		"protocol_version": sarama.DefaultVersion.String(),
		"operations":       Operations, "extras": Extras,
		"settings": map[string]any{
			"request_timeout":  "Net.ReadTimeout / Net.WriteTimeout (every request alike), Producer.Timeout (Produce's timeout_ms)",
			"delivery_timeout": "none: Producer.Retry.Max x (Net.ReadTimeout + Producer.Retry.Backoff) bounds a record",
			"max_block":        "none: Metadata.Retry.Max x Metadata.Retry.Backoff bounds the wait for metadata",
			"api_timeout":      "none: sarama's calls take no deadline",
			"admin_timeout":    "none per call; the step's deadline is Admin.Timeout, the timeout_ms of CreateTopics and DeleteRecords",
			"txn_timeout":      "Producer.Transaction.Timeout",
		},
	}
}

func (saramaClient) Perform(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	if op, ok := ops[step.Kind]; ok {
		return op(run, step)
	}
	if extra, ok := extraCalls[step.Kind]; ok {
		return lineproto.Timed(step.Kind, func() (any, error) { return extra(run, step) }, errorName)
	}
	return lineproto.Failed(step.Kind, 0, "UnsupportedOperation", "sarama adapter has no operation "+step.Kind)
}

// errorName names a sarama error: Kafka's Java name where it is the same error, else sarama's own.
func errorName(err error) (string, string) {
	var pe *sarama.ProducerError
	if errors.As(err, &pe) && pe.Err != nil {
		name, msg := errorName(pe.Err)
		return name, "sarama.ProducerError: " + msg
	}
	var abandoned lineproto.Abandoned
	if errors.As(err, &abandoned) {
		return "TimeoutException", "abandoned: " + err.Error()
	}
	var ke sarama.KError
	var ce sarama.ConfigurationError
	if errors.Is(err, sarama.ErrOutOfBrokers) { // the last broker's error decides the name
		if lineproto.IsTimeout(err) {
			return "TimeoutException", "sarama.ErrOutOfBrokers: " + err.Error()
		}
		return "ErrOutOfBrokers", "sarama.ErrOutOfBrokers: " + err.Error()
	}
	switch {
	case errors.As(err, &ce):
		return "ConfigException", "sarama.ConfigurationError: " + err.Error()
	case lineproto.IsTimeout(err):
		return "TimeoutException", lineproto.Message(lineproto.GoName(err), err)
	case errors.As(err, &ke):
		if name, ok := lineproto.JavaNames[int16(ke)]; ok {
			return name, "sarama.KError(" + fmt.Sprint(int16(ke)) + "): " + err.Error()
		}
		return "sarama.KError", err.Error()
	case errors.Is(err, sarama.ErrNotConnected):
		return "ErrNotConnected", "sarama.ErrNotConnected: " + err.Error()
	case errors.Is(err, sarama.ErrClosedClient):
		return "ErrClosedClient", "sarama.ErrClosedClient: " + err.Error()
	}
	return lineproto.GoName(err), err.Error()
}

func failed(kind string, start time.Time, err error) lineproto.Outcome {
	name, msg := errorName(err)
	return lineproto.Failed(kind, time.Since(start), name, msg)
}

// notCreated: sarama.NewClient failed (it fetches metadata from the bootstrap brokers), so the
// step's call was never made. The time it took is reported: it is sarama's own bound.
func notCreated(kind string, start time.Time, err error) lineproto.Outcome {
	name, msg := errorName(err)
	if name != "TimeoutException" && name != "ConfigException" {
		name = "ClientNotCreated"
	}
	return lineproto.Failed(kind, time.Since(start), name, "sarama.NewClient failed before "+kind+": "+msg)
}

type stderrLogger struct{}

func newStderrLogger() sarama.StdLogger { return stderrLogger{} }

func (stderrLogger) Print(v ...any)                 { fmt.Fprint(os.Stderr, v...) }
func (stderrLogger) Printf(format string, v ...any) { fmt.Fprintf(os.Stderr, format, v...) }
func (stderrLogger) Println(v ...any)               { fmt.Fprintln(os.Stderr, v...) }
