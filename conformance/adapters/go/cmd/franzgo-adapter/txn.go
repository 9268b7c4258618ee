package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"brokeremu/goadapters/internal/lineproto"
)

// The transactional producer's operations for the txn scenarios (conformance/scenarios_txn.py),
// as the Java program's Txn.java runs them:
//
//	initTransactions    Client.ProducerID(ctx): loads the producer ID (InitProducerId with the
//	                    transactional ID), which kgo otherwise does on the first record
//	beginTransaction    Client.BeginTransaction()
//	send().get()        Client.ProduceSync(ctx, record)
//	commitTransaction   Client.EndTransaction(ctx, kgo.TryCommit)
//
// max.block.ms, when the run sets it, is the context given to ProducerID (when the step times
// init) and to EndTransaction: franz-go's transactional calls take a context, not a setting.
// Without it they get no deadline of their own (franz-go's retry budget, kgo.RetryTimeout, bounds
// each request's retries), under the adapter's guard (txnGuard), which reports NoReturn.
// transaction.timeout.ms -> kgo.TransactionTimeout; transactional.id: the run's client id + "-tx".

// txnSetup bounds a call that is set-up, not the scenario's timed call (a cold start on a loaded
// machine must not fail it), as the other adapters' 30 s send().get().
const txnSetup = 30 * time.Second

var errGuard = errors.New("the adapter's guard ran out")

// txnGuard: how long a transactional call with no max.block.ms may take before the adapter stops
// waiting (NoReturn), as py_common.watchdog_s does for the Python clients without a bound.
func txnGuard(run *lineproto.Run) time.Duration {
	return max(4*run.Ms("transaction.timeout.ms", own(run, 60*time.Second)), 20*time.Second)
}

// blockContext: max.block.ms when the run sets it, else the guard (its expiry is told apart by
// context.Cause).
func blockContext(run *lineproto.Run) (context.Context, context.CancelFunc) {
	if run.Has("max.block.ms") {
		return context.WithTimeout(context.Background(), run.Ms("max.block.ms", 0))
	}
	return context.WithTimeoutCause(context.Background(), txnGuard(run), errGuard)
}

func setupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), txnSetup)
}

// txnClient: a transactional producer (kgo.TransactionalID, idempotent, acks=all) whose records go
// to the partition they name.
func txnClient(run *lineproto.Run, clientID string) (*kgo.Client, error) {
	r := *run
	r.ClientID = clientID
	opts := append(producerOpts(&r), kgo.TransactionalID(run.ClientID+"-tx"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if run.Has("transaction.timeout.ms") {
		opts = append(opts, kgo.TransactionTimeout(run.Ms("transaction.timeout.ms", 0)))
	}
	// kgo refuses a RecordDeliveryTimeout under 1 s (config.go validation, "record timeout"); no txn
	// scenario times the record's delivery timeout, they need it only to end a held record
	// (txn.late-produce's 3030 ms is 101 ms at scale 30), so a shorter one is raised to the floor and
	// said so on stderr: the record then fails at 1 s.
	if d := run.Ms("delivery.timeout.ms", 0); run.Has("delivery.timeout.ms") && d < kgoMinRecordTimeout {
		logf("delivery.timeout.ms %v is under kgo's 1 s floor: the transactional producer runs with 1 s", d)
		opts = append(opts, kgo.RecordDeliveryTimeout(kgoMinRecordTimeout))
	}
	return kgo.NewClient(opts...)
}

// kgoMinRecordTimeout: the least RecordDeliveryTimeout kgo accepts.
const kgoMinRecordTimeout = time.Second

func txnRecord(args map[string]any, value string) *kgo.Record {
	return &kgo.Record{Topic: lineproto.ArgStr(args, "topic", "t"), Partition: int32(lineproto.ArgInt(args, "partition", 0)),
		Value: []byte(value)}
}

// txnErrorName names a transactional call's error. EndTransaction returns the EndTxn answer's
// code as a kerr.Error (txn.go EndTransaction: `kerr.ErrorForCode(resp.ErrorCode)`), so a commit
// refused for a stale epoch is kerr.ProducerFenced (pkg/kerr/kerr.go: PRODUCER_FENCED, 90), Java's
// ProducerFencedException through JavaNames, or kerr.InvalidProducerEpoch (47), which Java's
// TransactionManager.EndTxnHandler treats the same ("We could still receive INVALID_PRODUCER_EPOCH
// from old versioned transaction coordinator, just treat it the same as PRODUCE_FENCED"). A call
// whose context (max.block.ms) ran out returns ctx.Err() (producer.go ProducerID: `case
// <-ctx.Done(): return 0, 0, ctx.Err()`; a request canceled after it was written fails with
// ctx.Err(), broker.go abandonOnCancel): context.DeadlineExceeded, TimeoutException in errorName.
// The adapter's guard running out is NoReturn.
func txnErrorName(ctx context.Context, err error) (string, string) {
	if ctx != nil && errors.Is(context.Cause(ctx), errGuard) && errors.Is(err, context.DeadlineExceeded) {
		return "NoReturn", fmt.Sprintf("no return within the adapter's guard (no max.block.ms bound): %v", err)
	}
	if errors.Is(err, kerr.InvalidProducerEpoch) {
		return "ProducerFencedException", lineproto.Message("kerr.InvalidProducerEpoch", err)
	}
	return errorName(err)
}

func txnFailed(kind string, start time.Time, ctx context.Context, err error) lineproto.Outcome {
	name, msg := txnErrorName(ctx, err)
	return lineproto.Failed(kind, time.Since(start), name, msg)
}

// produceOne: ProduceSync of one record, as Java's send().get(30 s).
func produceOne(cl *kgo.Client, r *kgo.Record) error {
	ctx, cancel := setupContext()
	defer cancel()
	return cl.ProduceSync(ctx, r).FirstErr()
}

// transaction: init, then count times: begin, one record, open_s open (already scaled), commit.
// time_init: init is the timed call (bounded by max.block.ms); retry_commit: after a commit that
// timed out, EndTransaction(TryCommit) once more, and what it did is the outcome's value.
// Timed: the call that failed, else the last commit.
func transaction(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	cl, err := txnClient(run, run.ClientID)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(cl)
	args := step.Args
	start := time.Now()
	var initCtx context.Context
	var cancel context.CancelFunc
	if lineproto.ArgBool(args, "time_init", false) {
		initCtx, cancel = blockContext(run)
	} else {
		initCtx, cancel = setupContext()
	}
	_, _, err = cl.ProducerID(initCtx)
	cancel()
	if err != nil {
		return txnFailed(step.Kind, start, initCtx, err)
	}
	for i := int64(0); i < lineproto.ArgInt(args, "count", 1); i++ {
		if err := cl.BeginTransaction(); err != nil {
			return txnFailed(step.Kind, start, nil, err)
		}
		if err := produceOne(cl, txnRecord(args, "txn")); err != nil {
			return txnFailed(step.Kind, start, nil, err)
		}
		time.Sleep(lineproto.Seconds(lineproto.ArgFloat(args, "open_s", 0)))
		ctx, cancel := blockContext(run)
		start = time.Now()
		err := cl.EndTransaction(ctx, kgo.TryCommit)
		elapsed := time.Since(start)
		cancel()
		if err != nil {
			name, msg := txnErrorName(ctx, err)
			o := lineproto.Failed(step.Kind, elapsed, name, msg)
			if name == "TimeoutException" && lineproto.ArgBool(args, "retry_commit", false) {
				o.Value = commitAgain(cl)
			}
			return o
		}
	}
	return lineproto.Ok(step.Kind, time.Since(start), nil)
}

// commitAgain: the commit called again after it timed out, as the scenario asks; what it did is the
// outcome's value. franz-go does not wait for the pending EndTxn as Java does: kgo's EndTransaction
// refuses to retry a commit whose outcome it does not know ("retrying with TryCommit instead is
// refused, since the prior outcome is unknowable"), after reloading the producer ID, which bumps
// the epoch and so aborts the transaction (its documented retry is TryAbort, which does the same).
func commitAgain(cl *kgo.Client) string {
	ctx, cancel := setupContext()
	defer cancel()
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return "calling commit again failed: " + err.Error()
	}
	return "committed when called again"
}

// txnZombie: a first instance opens a transaction with one record; a second instance with the
// same transactional.id (client id + "-new") initialises (fencing the first), commits a
// transaction of its own; then the first commits. Timed: that last commit.
func txnZombie(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	zombie, err := txnClient(run, run.ClientID)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(zombie)
	fresh, err := txnClient(run, run.ClientID+"-new")
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(fresh)
	for _, phase := range []struct {
		cl     *kgo.Client
		value  string
		commit bool
	}{{zombie, "zombie", false}, {fresh, "fresh", true}} {
		ctx, cancel := setupContext()
		_, _, err := phase.cl.ProducerID(ctx)
		if err == nil {
			err = phase.cl.BeginTransaction()
		}
		if err == nil {
			err = produceOne(phase.cl, txnRecord(step.Args, phase.value))
		}
		if err == nil && phase.commit {
			err = phase.cl.EndTransaction(ctx, kgo.TryCommit)
		}
		cancel()
		if err != nil {
			o := txnFailed(step.Kind, start, nil, err)
			msg := phase.value + " instance: " + *o.ErrorMessage
			o.ErrorMessage = &msg
			return o
		}
	}
	ctx, cancel := blockContext(run)
	defer cancel()
	start = time.Now()
	if err := zombie.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return txnFailed(step.Kind, start, ctx, err)
	}
	return lineproto.Ok(step.Kind, time.Since(start), nil)
}

// readCommittedBehindOpenTxn: a transaction left open (client id + "-hung"), a plain record after
// it (client id + "-plain"), then a read_committed consumer (kgo.FetchIsolationLevel(
// kgo.ReadCommitted())) of the partition from its start polls until it sees a record. Timed:
// that wait, bounded by the step's deadline; value: the values it read.
func readCommittedBehindOpenTxn(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	topic, partition := lineproto.ArgStr(step.Args, "topic", "t"), int32(lineproto.ArgInt(step.Args, "partition", 0))
	start := time.Now()
	hung, err := txnClient(run, run.ClientID+"-hung")
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(hung)
	plainRun := *run
	plainRun.ClientID = run.ClientID + "-plain"
	plain, err := kgo.NewClient(append(producerOpts(&plainRun), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(plain)
	ctx, cancel := setupContext()
	_, _, err = hung.ProducerID(ctx)
	cancel()
	if err == nil {
		err = hung.BeginTransaction()
	}
	if err == nil {
		err = produceOne(hung, &kgo.Record{Topic: topic, Partition: partition, Value: []byte("in the open transaction")})
	}
	if err == nil {
		err = produceOne(plain, &kgo.Record{Topic: topic, Partition: partition, Value: []byte("after it")})
	}
	if err != nil {
		return txnFailed(step.Kind, start, nil, err)
	}
	consumer, err := kgo.NewClient(append(consumerOpts(run), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(consumer)
	limit := 60 * time.Second
	if d, ok := step.Timeout(); ok {
		limit = d
	}
	start = time.Now()
	seen := []any{}
	for len(seen) == 0 && time.Since(start) < limit {
		pctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		fetches := consumer.PollFetches(pctx)
		cancel()
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return failed(step.Kind, start, fe.Err)
			}
		}
		fetches.EachRecord(func(r *kgo.Record) { seen = append(seen, r.Value) })
	}
	if len(seen) == 0 {
		return lineproto.Failed(step.Kind, time.Since(start), "TimeoutException", "no record became visible")
	}
	return lineproto.Ok(step.Kind, time.Since(start), seen)
}

// txnAbortThenCommit: a transaction whose one record ("txn-1") fails is aborted, and the next
// commits one record ("txn-2"), on one client, as Txn.java's abortThenCommit. The abort is
// AbortBufferedRecords then EndTransaction(TryAbort), as kgo's GroupTransactSession.End aborts.
// Timed: from the abort to the commit; the value is how the first record ended (nil: delivered).
func txnAbortThenCommit(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	cl, err := txnClient(run, run.ClientID)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(cl)
	ctx, cancel := setupContext()
	defer cancel()
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return txnFailed(step.Kind, start, ctx, err)
	}
	if err := cl.BeginTransaction(); err != nil {
		return txnFailed(step.Kind, start, nil, err)
	}
	var first any
	if err := produceOne(cl, txnRecord(step.Args, "txn-1")); err != nil {
		first, _ = txnErrorName(nil, err)
	}
	block, cancelBlock := blockContext(run)
	defer cancelBlock()
	start = time.Now()
	if err := cl.AbortBufferedRecords(block); err != nil {
		return txnFailed(step.Kind, start, block, fmt.Errorf("aborting the first transaction's records: %w", err))
	}
	if err := cl.EndTransaction(block, kgo.TryAbort); err != nil {
		return txnFailed(step.Kind, start, block, fmt.Errorf("aborting the first transaction: %w", err))
	}
	if err := cl.BeginTransaction(); err != nil {
		return txnFailed(step.Kind, start, nil, err)
	}
	if err := produceOne(cl, txnRecord(step.Args, "txn-2")); err != nil {
		return txnFailed(step.Kind, start, nil, err)
	}
	if err := cl.EndTransaction(block, kgo.TryCommit); err != nil {
		return txnFailed(step.Kind, start, block, err)
	}
	return lineproto.Ok(step.Kind, time.Since(start), first)
}

// txnErrorProbe: lineproto.TxnProbe with kgo's calls: init ProducerID, begin BeginTransaction,
// send ProduceSync, commit EndTransaction(TryCommit), abort AbortBufferedRecords then
// EndTransaction(TryAbort) (kgo's documented abort); each bounded by max.block.ms as above.
func txnErrorProbe(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	cl, err := txnClient(run, run.ClientID)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(cl)
	bounded := func(call func(context.Context) error) func() error {
		return func() error {
			ctx, cancel := blockContext(run)
			defer cancel()
			return call(ctx)
		}
	}
	calls := lineproto.TxnCalls{
		"init":   bounded(func(ctx context.Context) error { _, _, err := cl.ProducerID(ctx); return err }),
		"begin":  cl.BeginTransaction,
		"send":   func() error { return produceOne(cl, txnRecord(step.Args, "txn")) },
		"commit": bounded(func(ctx context.Context) error { return cl.EndTransaction(ctx, kgo.TryCommit) }),
		"abort": bounded(func(ctx context.Context) error {
			if err := cl.AbortBufferedRecords(ctx); err != nil {
				return err
			}
			return cl.EndTransaction(ctx, kgo.TryAbort)
		}),
	}
	return lineproto.TxnProbe(step, calls, ownErrorName)
}

// ownErrorName: the error as franz-go returned it: kerr's name (and whether kerr calls it
// retriable), or the Go error's type.
func ownErrorName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		if ke.Retriable {
			return "kerr." + ke.Message + " (retriable)"
		}
		return "kerr." + ke.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "context.DeadlineExceeded"
	}
	return fmt.Sprintf("%T", err)
}
