// Command franzgo-adapter drives franz-go (github.com/twmb/franz-go, pkg/kgo and pkg/kadm)
// through the conformance suite's line protocol (conformance/adapters/line_protocol.py).
// Each step builds its own client from the run's config (Kafka's dotted names, mapped to kgo
// options in options.go) and is timed around franz-go's own call.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"brokeremu/goadapters/internal/lineproto"
)

// Operations are the conformance operations (conformance/adapters/base.py) this program maps.
var Operations = []string{"produce", "produce_pipelined", "configure_producer", "poll", "committed",
	"end_offsets", "beginning_offsets", "offsets_for_times", "list_topics", "partitions_for", "commit_sync",
	"close", "admin_list_topics", "transaction", "txn_zombie", "txn_abort_then_commit", "read_committed_behind_open_txn", "txn_error_probe",
	"create_topics", "delete_records", "kip848_heartbeats", "kip848_late_poll", "kip848_member_crash",
	"kip848_slow_revoke", "kip848_stale_commit", "kip848_coordinator_dies", "join_group_held",
	"share_lock_expires", "share_renew", "share_ack_black_holed", "share_delivery_limit", "share_close_pending"}

// kip848Calls are the KIP-848 steps (kip848.go).
var kip848Calls = map[string]func(*lineproto.Run, lineproto.Step) lineproto.Outcome{
	"kip848_heartbeats":       kip848Heartbeats,
	"kip848_late_poll":        kip848LatePoll,
	"kip848_member_crash":     kip848MemberCrash,
	"kip848_slow_revoke":      kip848SlowRevoke,
	"kip848_stale_commit":     kip848StaleCommit,
	"kip848_coordinator_dies": kip848CoordinatorDies,
}

type franz struct{}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "member" { // kip848_member_crash's first member (kip848.go)
		memberProcess(os.Args[2])
		return
	}
	lineproto.Main(franz{})
}

func moduleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "unknown"
}

func (franz) Hello() map[string]any {
	return map[string]any{
		"client": "franz-go", "version": moduleVersion("github.com/twmb/franz-go"),
		"kadm": moduleVersion("github.com/twmb/franz-go/pkg/kadm"), "go": strings.TrimPrefix(runtimeVersion(), "go"),
		"operations": Operations, "extras": Extras,
		"settings": map[string]any{
			"request_timeout":  "kgo.RequestTimeoutOverhead (the read deadline: alone for most requests, added to TimeoutMillis for Produce) and kgo.ProduceRequestTimeout (Produce's timeout_ms)",
			"delivery_timeout": "kgo.RecordDeliveryTimeout (enforced only while it is safe for the idempotent sequence)",
			"max_block":        "the context given to Client.Produce (fails a record not yet written in a request), Client.ProducerID (initTransactions) and Client.EndTransaction (commitTransaction)",
			"api_timeout":      "a context deadline per call; without one kgo.RetryTimeout bounds the retries",
			"admin_timeout":    "a context deadline on the kadm call; for CreateTopics and DeleteRecords also their TimeoutMillis (kadm.Client.SetTimeoutMillis)",
			"txn_timeout":      "kgo.TransactionTimeout",
		},
	}
}

func (franz) Perform(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	switch step.Kind {
	case "produce":
		return produce(run, step)
	case "produce_pipelined":
		return producePipelined(run, step)
	case "configure_producer":
		return configureProducer(run, step)
	case "poll":
		return poll(run, step)
	case "close":
		return closeStep(run, step)
	case "admin_list_topics":
		return adminListTopics(run, step)
	case "transaction":
		return transaction(run, step)
	case "txn_zombie":
		return txnZombie(run, step)
	case "txn_abort_then_commit":
		return txnAbortThenCommit(run, step)
	case "txn_error_probe":
		return txnErrorProbe(run, step)
	case "read_committed_behind_open_txn":
		return readCommittedBehindOpenTxn(run, step)
	case "create_topics":
		return createTopics(run, step)
	case "delete_records":
		return deleteRecords(run, step)
	case "join_group_held":
		return joinGroupHeld(run, step)
	}
	if _, ok := shareStories[step.Kind]; ok {
		return shareStep(run, step)
	}
	if call, ok := kip848Calls[step.Kind]; ok {
		return call(run, step)
	}
	if call, ok := adminCalls[step.Kind]; ok {
		return adminStep(run, step, call)
	}
	if extra, ok := extraCalls[step.Kind]; ok {
		return lineproto.Timed(step.Kind, func() (any, error) { return extra(run, step) }, errorName)
	}
	return lineproto.Failed(step.Kind, 0, "UnsupportedOperation", "franz-go adapter has no operation "+step.Kind)
}

// errorName names a franz-go error: Kafka's Java name where it is the same error, else kgo's own.
// The message always keeps franz-go's own name and words.
func errorName(err error) (string, string) {
	var ke *kerr.Error
	var abandoned lineproto.Abandoned
	switch {
	case errors.As(err, &abandoned):
		return "TimeoutException", "abandoned: " + err.Error()
	case errors.Is(err, kgo.ErrRecordTimeout):
		return "TimeoutException", lineproto.Message("kgo.ErrRecordTimeout", err)
	case errors.Is(err, context.DeadlineExceeded):
		return "TimeoutException", lineproto.Message("context.DeadlineExceeded", err)
	case lineproto.IsTimeout(err):
		return "TimeoutException", lineproto.Message(lineproto.GoName(err), err)
	case errors.Is(err, kgo.ErrRecordRetries):
		return "ErrRecordRetries", lineproto.Message("kgo.ErrRecordRetries", err)
	case errors.Is(err, kgo.ErrClientClosed):
		return "ErrClientClosed", lineproto.Message("kgo.ErrClientClosed", err)
	case errors.As(err, &ke):
		if name, ok := lineproto.JavaNames[ke.Code]; ok {
			return name, lineproto.Message("kerr."+ke.Message, err)
		}
		return "kerr." + ke.Message, err.Error()
	}
	var dial *kgo.ErrFirstReadEOF
	if errors.As(err, &dial) {
		return "ErrFirstReadEOF", err.Error()
	}
	return lineproto.GoName(err), err.Error()
}

func failed(kind string, start time.Time, err error) lineproto.Outcome {
	name, msg := errorName(err)
	return lineproto.Failed(kind, time.Since(start), name, msg)
}

// notCreated: the client could not be built, so the step's call was never made.
func notCreated(kind string, err error) lineproto.Outcome {
	return lineproto.Failed(kind, 0, "ClientNotCreated", fmt.Sprintf("kgo.NewClient failed before %s: %v", kind, err))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "franzgo-adapter: "+format+"\n", args...)
}
