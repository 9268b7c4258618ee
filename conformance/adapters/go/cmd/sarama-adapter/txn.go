package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/IBM/sarama"

	"brokeremu/goadapters/internal/lineproto"
)

// The transactional producer's operations for the txn scenarios (conformance/scenarios_txn.py),
// as the Java program's Txn.java runs them, on a SyncProducer with Producer.Transaction.ID (the
// run's client id + "-tx"), Producer.Idempotent, acks=WaitForAll and Net.MaxOpenRequests=1:
//
//	initTransactions    sarama.NewSyncProducerFromClient: sarama sends InitProducerId while it
//	                    builds the producer (async_producer.go NewAsyncProducerFromClient ->
//	                    newTransactionManager -> initProducerId), retried up to
//	                    Producer.Transaction.Retry.Max (50) times, each attempt bounded by Net.ReadTimeout
//	beginTransaction    SyncProducer.BeginTxn()
//	send().get()        SyncProducer.SendMessage (AddPartitionsToTxn first, then Produce)
//	commitTransaction   SyncProducer.CommitTxn() (transaction_manager.go endTxn: EndTxn retried
//	                    on a network error or a retriable answer, Producer.Transaction.Retry.Max times)
//
// None of these takes a deadline and sarama has no max.block.ms: in the scenarios timed by it
// (txn.commit-endtxn-black-hole, txn.init-coordinator-unreachable) sarama's retry budget stands in,
// the timing contract is N/A and the others judge sarama (go_capabilities.py SARAMA_BLOCK_STAND_IN).
// transaction.timeout.ms -> Producer.Transaction.Timeout
// (sarama's own 1 min, scaled, otherwise); retry.backoff.ms -> Producer.Transaction.Retry.Backoff
// (sarama's own 100 ms, scaled, otherwise).

// txnErrorName: CommitTxn returns the EndTxn answer's KError as the transaction manager's last
// error (transaction_manager.go endTxn: `t.transitionTo(ProducerTxnFlagInError|
// ProducerTxnFlagFatalError, response.Err)`), so a commit refused for a stale epoch is
// sarama.ErrProducerFenced (errors.go: KError 90, PRODUCER_FENCED), Java's ProducerFencedException
// through JavaNames, or sarama.ErrInvalidProducerEpoch (47), which Java's
// TransactionManager.EndTxnHandler treats the same ("We could still receive INVALID_PRODUCER_EPOCH
// from old versioned transaction coordinator, just treat it the same as PRODUCE_FENCED"). The rest
// as errorName.
func txnErrorName(err error) (string, string) {
	if errors.Is(err, sarama.ErrInvalidProducerEpoch) {
		return "ProducerFencedException", "sarama.KError(47): " + err.Error()
	}
	return errorName(err)
}

func txnFailed(kind string, start time.Time, err error) lineproto.Outcome {
	name, msg := txnErrorName(err)
	return lineproto.Failed(kind, time.Since(start), name, msg)
}

// txnConfig: the transactional producer's settings on top of the run's.
func txnConfig(run *lineproto.Run, clientID string) *sarama.Config {
	r := *run
	r.ClientID = clientID
	cfg := config(&r)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	if cfg.Producer.Retry.Max < 1 {
		cfg.Producer.Retry.Max = 1
	}
	cfg.Producer.Transaction.ID = run.ClientID + "-tx"
	cfg.Producer.Transaction.Timeout = run.Ms("transaction.timeout.ms", own(run, time.Minute))
	cfg.Producer.Transaction.Retry.Backoff = run.Ms("retry.backoff.ms", own(run, 100*time.Millisecond))
	return cfg
}

// txnProducer: a client and a transactional SyncProducer on it (InitProducerId included); close
// closes both.
func txnProducer(run *lineproto.Run, clientID string) (sarama.SyncProducer, func(), error) {
	client, err := newClient(run, txnConfig(run, clientID))
	if err != nil {
		return nil, nil, err
	}
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		closeSoon("client", client.Close)
		return nil, nil, err
	}
	return producer, func() { closeSoon("producer", producer.Close); closeSoon("client", client.Close) }, nil
}

func txnMessage(args map[string]any, value string) *sarama.ProducerMessage {
	return &sarama.ProducerMessage{Topic: lineproto.ArgStr(args, "topic", "t"),
		Partition: int32(lineproto.ArgInt(args, "partition", 0)), Value: sarama.StringEncoder(value)}
}

// transaction: init, then count times: begin, one record, open_s open (already scaled), commit.
// Timed: the call that failed (init: from the start, so time_init needs nothing more), else the
// last commit. retry_commit: after a commit that timed out, CommitTxn once more, and what it did
// is the outcome's value.
func transaction(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	producer, closeAll, err := txnProducer(run, run.ClientID)
	if err != nil {
		return txnFailed(step.Kind, start, fmt.Errorf("initialising the transactional producer: %w", err))
	}
	defer closeAll()
	for i := int64(0); i < lineproto.ArgInt(step.Args, "count", 1); i++ {
		if err := producer.BeginTxn(); err != nil {
			return txnFailed(step.Kind, start, err)
		}
		if _, _, err := producer.SendMessage(txnMessage(step.Args, "txn")); err != nil {
			return txnFailed(step.Kind, start, err)
		}
		time.Sleep(lineproto.Seconds(lineproto.ArgFloat(step.Args, "open_s", 0)))
		start = time.Now()
		if err := producer.CommitTxn(); err != nil {
			o := txnFailed(step.Kind, start, err)
			if o.ErrorType != nil && *o.ErrorType == "TimeoutException" && lineproto.ArgBool(step.Args, "retry_commit", false) {
				o.Value = commitAgain(producer)
			}
			return o
		}
	}
	return lineproto.Ok(step.Kind, time.Since(start), nil)
}

// commitAgain: CommitTxn called again after it timed out, as the scenario asks; what it did is the
// outcome's value.
func commitAgain(producer sarama.SyncProducer) string {
	if err := producer.CommitTxn(); err != nil {
		name, msg := txnErrorName(err)
		return "calling commit again failed: " + name + ": " + msg
	}
	return "committed when called again"
}

// txnZombie: a first instance opens a transaction with one record; a second instance with the
// same Transaction.ID (client id + "-new") initialises (fencing the first) and commits a
// transaction of its own; then the first commits. Timed: that last commit.
func txnZombie(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	zombie, closeZombie, err := txnProducer(run, run.ClientID)
	if err != nil {
		return txnFailed(step.Kind, start, fmt.Errorf("zombie instance: %w", err))
	}
	defer closeZombie()
	if err := zombie.BeginTxn(); err != nil {
		return txnFailed(step.Kind, start, fmt.Errorf("zombie instance: %w", err))
	}
	if _, _, err := zombie.SendMessage(txnMessage(step.Args, "zombie")); err != nil {
		return txnFailed(step.Kind, start, fmt.Errorf("zombie instance: %w", err))
	}
	fresh, closeFresh, err := txnProducer(run, run.ClientID+"-new")
	if err != nil {
		return txnFailed(step.Kind, start, fmt.Errorf("fresh instance: %w", err))
	}
	defer closeFresh()
	if err := fresh.BeginTxn(); err != nil {
		return txnFailed(step.Kind, start, fmt.Errorf("fresh instance: %w", err))
	}
	if _, _, err := fresh.SendMessage(txnMessage(step.Args, "fresh")); err != nil {
		return txnFailed(step.Kind, start, fmt.Errorf("fresh instance: %w", err))
	}
	if err := fresh.CommitTxn(); err != nil {
		return txnFailed(step.Kind, start, fmt.Errorf("fresh instance: %w", err))
	}
	start = time.Now()
	if err := zombie.CommitTxn(); err != nil {
		return txnFailed(step.Kind, start, err)
	}
	return lineproto.Ok(step.Kind, time.Since(start), nil)
}

// readCommittedBehindOpenTxn: a transaction left open (client id + "-hung"), a plain record after
// it (client id + "-plain"), then a consumer with Consumer.IsolationLevel = sarama.ReadCommitted
// reads the partition from its start until a message arrives (Messages()). Timed: that wait,
// bounded by the step's deadline; value: the values it read.
func readCommittedBehindOpenTxn(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	topic, partition := lineproto.ArgStr(step.Args, "topic", "t"), int32(lineproto.ArgInt(step.Args, "partition", 0))
	start := time.Now()
	hung, closeHung, err := txnProducer(run, run.ClientID+"-hung")
	if err != nil {
		return txnFailed(step.Kind, start, fmt.Errorf("the hung transaction's producer: %w", err))
	}
	defer closeHung()
	if err := hung.BeginTxn(); err != nil {
		return txnFailed(step.Kind, start, err)
	}
	if _, _, err := hung.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition,
		Value: sarama.StringEncoder("in the open transaction")}); err != nil {
		return txnFailed(step.Kind, start, err)
	}
	plainRun := *run
	plainRun.ClientID = run.ClientID + "-plain"
	plainCfg := config(&plainRun)
	plainCfg.Producer.Partitioner = sarama.NewManualPartitioner
	plainClient, err := newClient(&plainRun, plainCfg)
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("client", plainClient.Close)
	plain, err := sarama.NewSyncProducerFromClient(plainClient)
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("producer", plain.Close)
	if _, _, err := plain.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition,
		Value: sarama.StringEncoder("after it")}); err != nil {
		return failed(step.Kind, start, err)
	}
	cfg := config(run)
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	client, err := newClient(run, cfg)
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("client", client.Close)
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("consumer", consumer.Close)
	limit := 60 * time.Second
	if d, ok := step.Timeout(); ok {
		limit = d
	}
	start = time.Now()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	pc, err := consumer.ConsumePartition(topic, partition, sarama.OffsetOldest)
	if err != nil {
		return failed(step.Kind, start, err)
	}
	defer pc.AsyncClose()
	for {
		select {
		case m := <-pc.Messages():
			seen := []any{m.Value}
			for more := true; more; {
				select {
				case m := <-pc.Messages():
					seen = append(seen, m.Value)
				default:
					more = false
				}
			}
			return lineproto.Ok(step.Kind, time.Since(start), seen)
		case ce := <-pc.Errors():
			fmt.Fprintf(os.Stderr, "sarama-adapter: read_committed: %v\n", ce)
		case <-deadline.C:
			return lineproto.Failed(step.Kind, time.Since(start), "TimeoutException", "no record became visible")
		}
	}
}

// txnAbortThenCommit: a transaction whose one record ("txn-1") fails is aborted, and the next
// commits one record ("txn-2"), on one producer, as Txn.java's abortThenCommit. Timed: from the
// abort to the commit; the value is how the first record ended (nil: delivered).
func txnAbortThenCommit(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	producer, closeAll, err := txnProducer(run, run.ClientID)
	if err != nil {
		return txnFailed(step.Kind, start, fmt.Errorf("initialising the transactional producer: %w", err))
	}
	defer closeAll()
	if err := producer.BeginTxn(); err != nil {
		return txnFailed(step.Kind, start, err)
	}
	var first any
	if _, _, err := producer.SendMessage(txnMessage(step.Args, "txn-1")); err != nil {
		first, _ = txnErrorName(err)
	}
	start = time.Now()
	if err := producer.AbortTxn(); err != nil {
		return txnFailed(step.Kind, start, fmt.Errorf("aborting the first transaction: %w", err))
	}
	if err := producer.BeginTxn(); err != nil {
		return txnFailed(step.Kind, start, err)
	}
	if _, _, err := producer.SendMessage(txnMessage(step.Args, "txn-2")); err != nil {
		return txnFailed(step.Kind, start, err)
	}
	if err := producer.CommitTxn(); err != nil {
		return txnFailed(step.Kind, start, err)
	}
	return lineproto.Ok(step.Kind, time.Since(start), first)
}

// txnErrorProbe: lineproto.TxnProbe with sarama's calls: init is building the producer (its
// transaction manager sends InitProducerId; init again builds another one), begin BeginTxn,
// send SendMessage, commit CommitTxn, abort AbortTxn.
func txnErrorProbe(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	var producer sarama.SyncProducer
	closeAll := func() {}
	defer func() { closeAll() }()
	calls := lineproto.TxnCalls{
		"init": func() error {
			p, c, err := txnProducer(run, run.ClientID)
			if err == nil {
				closeAll()
				producer, closeAll = p, c
			}
			return err
		},
		"begin":  func() error { return producer.BeginTxn() },
		"send":   func() error { _, _, err := producer.SendMessage(txnMessage(step.Args, "txn")); return err },
		"commit": func() error { return producer.CommitTxn() },
		"abort":  func() error { return producer.AbortTxn() },
	}
	return lineproto.TxnProbe(step, calls, ownErrorName)
}

// ownErrorName: the error as sarama returned it: its KError's name, or the Go error's type and text.
func ownErrorName(err error) string {
	var ke sarama.KError
	if errors.As(err, &ke) {
		return fmt.Sprintf("sarama.KError(%d)", int16(ke))
	}
	return fmt.Sprintf("%T: %.80s", err, err.Error())
}
