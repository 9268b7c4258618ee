package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"brokeremu/goadapters/internal/lineproto"
)

// The transactional part of a real-time chaos seed (conformance/chaos/realtime_txn.py, `broker-emu
// chaos --client franz-go --txn`): one transactional producer or one read_committed consumer per
// program, driven a call at a time, with the commands and answers of the Java program
// (conformance/adapters/java/src/main/java/brokeremu/adapter/ChaosTxn.java). A failed call answers
// `error` and `kind`: `retriable` (make the same call again), `abortable` (abort the transaction)
// or `fatal` (close the producer and start a successor). Every answer of the producer carries the
// record outcomes reported since the last one, [n, offset, error].
//
// The calls, in kgo's terms (pkg/kgo of franz-go v1.22.2):
//
//	chaos_txn_init    Client.ProducerID(ctx): InitProducerId with the transactional ID (fences
//	                  every earlier producer with that ID), which kgo otherwise does on the first record
//	chaos_txn_begin   Client.BeginTransaction()
//	chaos_txn_send    Client.Produce(record, promise); the promise is also the transaction's
//	                  kgo.AbortingFirstErrPromise
//	chaos_txn_flush   Client.Flush(ctx)
//	chaos_txn_commit  Client.Flush(ctx); if a record of the transaction failed, no commit (below);
//	                  else Client.EndTransaction(ctx, kgo.TryCommit)
//	chaos_txn_abort   Client.AbortBufferedRecords(ctx), then Client.EndTransaction(ctx, kgo.TryAbort)
//	chaos_txn_close   Client.Close() (fails what is still buffered with kgo.ErrClientClosed)
//
// ctx is max.block.ms: kgo's transactional calls take a context, not a setting (txn.go's notes).
//
// Where kgo differs from the Java client, and this program keeps kgo's way:
//
//   - A commit whose outcome is unconfirmed (its context ran out with the EndTxn in flight, a
//     transport error, UNKNOWN_SERVER_ERROR) cannot be called again: kgo refuses a TryCommit
//     retry ("cannot retry a commit whose outcome is unconfirmed", txn.go EndTransaction) and
//     documents TryAbort as the retry, which reloads the producer ID (InitProducerId at the same
//     id and epoch: the epoch bump fence-aborts what is still open) and returns nil without an
//     EndTxn. Java's TimeoutException from commitTransaction is retriable (the same commit
//     completes). So here such a commit answers `abortable`; the history then has a commit that
//     failed and an abort that succeeded, a transaction whose outcome is unknown (the abort may
//     come after the commit completed on the coordinator), which is what the checker makes of it.
//   - kgo commits whatever records succeeded when asked to (doWithConcurrentTransactions' comment,
//     "Two known divergences from Java"); Java refuses a commit after any failed send. A kgo
//     application checks its records first: kgo.AbortingFirstErrPromise (producer.go) aborts every
//     buffered record on the first error, and kgo's examples commit only when FirstErrPromise.Err()
//     is nil. This program does that, so a transaction with a failed record answers `abortable`
//     without an EndTxn, as Java's commitTransaction does.
//   - A produce answered INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_ID_MAPPING or
//     OUT_OF_ORDER_SEQUENCE_NUMBER fails the record and kgo's producer ID (sink.go, "For the
//     transactional producer, we always fail the producerID"); whether the producer goes on, kgo
//     decides at the next BeginTransaction (txn.go maybeRecoverProducerID: under KIP-890 part 2
//     only UNKNOWN_PRODUCER_ID and TRANSACTION_ABORTABLE are recovered, by a new InitProducerId;
//     before it also INVALID_PRODUCER_ID_MAPPING and INVALID_PRODUCER_EPOCH). The Java client makes
//     all of them but INVALID_PRODUCER_ID_MAPPING an abortable error, bumping the epoch itself
//     where needed (TransactionManager.maybeTransitionToErrorState, kafka-clients 4.4.0), so after
//     INVALID_PRODUCER_EPOCH or OUT_OF_ORDER_SEQUENCE_NUMBER under KIP-890 part 2 Java aborts and
//     goes on where kgo refuses the next transaction. Here an end call's Kafka error is `abortable`
//     (kgo's TryAbort then recovers the ID or ends the transaction, txn.go EndTransaction) and
//     kgo's own verdict comes from chaos_txn_begin ("producer ID has a fatal, unrecoverable
//     error"), answered `fatal`. Only PRODUCER_FENCED, which kgo never recovers from a coordinator
//     ("PRODUCER_FENCED from coordinator paths is not recoverable", txn.go), is `fatal` at once.
type chaosTxnState struct {
	producer *kgo.Client
	block    time.Duration        // max.block.ms
	txn      *kgo.FirstErrPromise // the open transaction's records
	outcomes lineproto.Outcomes

	consumer  *kgo.Client
	admin     *kadm.Client
	group     string
	assigned  []topicPartition
	positions map[topicPartition]int64
}

type topicPartition struct {
	topic     string
	partition int32
}

var chaosTxn chaosTxnState

// chaosTxnCommand answers one chaos_txn_* command (the Java program's answers).
func chaosTxnCommand(cmd string, req map[string]any) map[string]any {
	answer, err, kind := map[string]any{}, error(nil), ""
	switch cmd {
	case "chaos_txn_producer":
		err = chaosTxn.newProducer(lineproto.RunOf(req))
		kind = "fatal"
	case "chaos_txn_init":
		err, kind = chaosTxn.init()
	case "chaos_txn_begin":
		err, kind = chaosTxn.begin(), "fatal"
	case "chaos_txn_send":
		chaosTxn.send(req)
	case "chaos_txn_flush":
		err, kind = chaosTxn.flush(), "retriable"
	case "chaos_txn_commit":
		err, kind = chaosTxn.commit()
	case "chaos_txn_abort":
		err, kind = chaosTxn.abort()
	case "chaos_txn_close":
		if chaosTxn.producer != nil {
			closeSoon(chaosTxn.producer)
		}
	case "chaos_txn_consumer":
		err, kind = chaosTxn.newConsumer(req), "fatal"
	case "chaos_txn_poll":
		answer["records"] = chaosTxn.poll(time.Duration(lineproto.Float(req["timeout_ms"], 200)) * time.Millisecond)
	case "chaos_txn_positions":
		answer["positions"] = chaosTxn.positionList()
	case "chaos_txn_commit_offsets":
		err, kind = chaosTxn.commitOffsets(req)
	case "chaos_txn_consumer_close":
		if chaosTxn.consumer != nil {
			closeSoon(chaosTxn.consumer)
		}
	default:
		return map[string]any{"fatal": "unknown cmd " + cmd}
	}
	var failed recordFailed
	if errors.As(err, &failed) {
		answer["ok"], answer["error"], answer["kind"] = false, failed.Error(), kind
	} else if err != nil {
		name, msg := errorName(err)
		answer["ok"], answer["error"], answer["kind"] = false, name+": "+msg, kind
	} else {
		answer["ok"] = true
	}
	answer["outcomes"] = chaosTxn.outcomes.Drain()
	return answer
}

// newProducer: the default workload's producer settings (producerOpts) with transactional.id ->
// kgo.TransactionalID and transaction.timeout.ms -> kgo.TransactionTimeout; records go to the
// partition they name.
func (s *chaosTxnState) newProducer(run *lineproto.Run) error {
	opts := append(producerOpts(run), kgo.TransactionalID(run.Str("transactional.id", run.ClientID)),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if run.Has("transaction.timeout.ms") {
		opts = append(opts, kgo.TransactionTimeout(run.Ms("transaction.timeout.ms", 0)))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	s.producer, s.block = cl, run.Ms("max.block.ms", 60*time.Second)
	s.txn = kgo.AbortingFirstErrPromise(cl)
	return nil
}

func (s *chaosTxnState) blocked() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.block)
}

// init: ProducerID. Its context running out leaves the load going on (ProducerID waits in a
// goroutine of its own, producer.go), and a load kgo did not keep (a retriable error, a transport
// error, CONCURRENT_TRANSACTIONS: *kgo.errProducerIDLoadFail, producer.go producerID) is made again
// by the next call: both `retriable`. A Kafka error kgo kept (doInitProducerID's "producer id
// initialization errored") is returned by every later call: `fatal`.
func (s *chaosTxnState) init() (error, string) {
	ctx, cancel := s.blocked()
	defer cancel()
	_, _, err := s.producer.ProducerID(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || fmt.Sprintf("%T", err) == "*kgo.errProducerIDLoadFail" {
		return err, "retriable"
	}
	return err, "fatal"
}

// recordFailed: a commit not sent because a record of the transaction failed.
type recordFailed struct{ err error }

func (e recordFailed) Error() string {
	name, msg := errorName(e.err)
	return "not committed: a record of the transaction failed (kgo.AbortingFirstErrPromise): " + name + ": " + msg
}

// begin: BeginTransaction fails only when the producer ID has an error kgo cannot recover from
// (fenced, or a Kafka error it keeps) or a transaction is already open: `fatal` either way.
func (s *chaosTxnState) begin() error {
	if err := s.producer.BeginTransaction(); err != nil {
		return err
	}
	s.txn = kgo.AbortingFirstErrPromise(s.producer)
	return nil
}

func (s *chaosTxnState) send(req map[string]any) {
	n := int64(lineproto.Float(req["n"], 0))
	value, _ := req["value"].([]byte)
	record := &kgo.Record{Topic: fmt.Sprint(req["topic"]), Partition: int32(lineproto.Float(req["partition"], 0)), Value: value}
	promise := s.txn.Promise()
	s.producer.Produce(context.Background(), record, func(r *kgo.Record, err error) {
		if err != nil {
			name, msg := errorName(err)
			s.outcomes.Add(n, nil, name+": "+msg)
		} else {
			s.outcomes.Add(n, r.Offset, nil)
		}
		promise(r, err)
	})
}

// flush: Flush returns only its context's error.
func (s *chaosTxnState) flush() error {
	ctx, cancel := s.blocked()
	defer cancel()
	return s.producer.Flush(ctx)
}

// commit: Flush (its context running out is `retriable`: nothing was ended), then the
// transaction's first record error (`abortable`, no EndTxn sent), then EndTransaction(TryCommit):
// PRODUCER_FENCED `fatal`, anything else `abortable` (the type's comment says why).
func (s *chaosTxnState) commit() (error, string) {
	ctx, cancel := s.blocked()
	defer cancel()
	if err := s.producer.Flush(ctx); err != nil {
		return err, "retriable"
	}
	if err := s.txn.Err(); err != nil { // every promise called: Flush returned with nothing buffered
		return recordFailed{err}, "abortable"
	}
	if err := s.producer.EndTransaction(ctx, kgo.TryCommit); err != nil {
		if errors.Is(err, kerr.ProducerFenced) {
			return err, "fatal"
		}
		return err, "abortable"
	}
	return nil, ""
}

// abort: AbortBufferedRecords (waits for every request in flight to be answered; its context
// running out is `retriable`), then EndTransaction(TryAbort): PRODUCER_FENCED `fatal`, anything
// else `retriable`, kgo's documented retry ("retry with TryAbort": the retry reloads the producer
// ID and returns nil, or fails again).
func (s *chaosTxnState) abort() (error, string) {
	ctx, cancel := s.blocked()
	defer cancel()
	if err := s.producer.AbortBufferedRecords(ctx); err != nil {
		return err, "retriable"
	}
	_ = s.txn.Err() // the promise's own AbortBufferedRecords is done before the transaction ends
	if err := s.producer.EndTransaction(ctx, kgo.TryAbort); err != nil {
		if errors.Is(err, kerr.ProducerFenced) {
			return err, "fatal"
		}
		return err, "retriable"
	}
	return nil, ""
}

// newConsumer: a read_committed consumer (kgo.FetchIsolationLevel(kgo.ReadCommitted())) of every
// partition of the topics from the start, without a group (kgo.ConsumePartitions; kgo consumes
// assigned partitions only outside a group), its offsets committed to group.id through kadm as
// Java's assign() + commitSync(offsets) commit them (OffsetCommit with generation -1).
// kgo.KeepControlRecords: kgo has no consumer position (Java's KafkaConsumer.position); the
// position here is one past the last record a poll returned, and a transaction's marker is one,
// so the position moves past a marker that ends a partition as Java's does. Markers are not
// reported as records. The position starts at 0, the log start of the chaos topics (nothing is
// deleted from them).
func (s *chaosTxnState) newConsumer(req map[string]any) error {
	run := lineproto.RunOf(req)
	topics, _ := req["topics"].([]any)
	parts := map[string]map[int32]kgo.Offset{}
	s.positions = map[topicPartition]int64{}
	for _, t := range topics {
		topic := fmt.Sprint(t)
		parts[topic] = map[int32]kgo.Offset{}
		for p := int32(0); p < int32(lineproto.Float(req["partitions"], 1)); p++ {
			parts[topic][p] = kgo.NewOffset().AtStart()
			tp := topicPartition{topic, p}
			s.assigned = append(s.assigned, tp)
			s.positions[tp] = 0
		}
	}
	cl, err := kgo.NewClient(append(consumerOpts(run), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.ConsumePartitions(parts))...)
	if err != nil {
		return err
	}
	s.consumer, s.admin, s.group = cl, newAdmin(run, cl), run.Str("group.id", run.ClientID)
	return nil
}

// poll: PollFetches for at most timeout; a fetch error other than the poll's own deadline is
// logged (kgo keeps fetching the partition: its errors are per partition, not the poll's).
func (s *chaosTxnState) poll(timeout time.Duration) []any {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	records := []any{}
	fetches := s.consumer.PollFetches(ctx)
	for _, fe := range fetches.Errors() {
		if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
			logf("chaos_txn_poll: %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
	}
	fetches.EachRecord(func(r *kgo.Record) {
		tp := topicPartition{r.Topic, r.Partition}
		s.positions[tp] = max(s.positions[tp], r.Offset+1)
		if !r.Attrs.IsControl() {
			records = append(records, []any{r.Topic, r.Partition, r.Offset, r.Value})
		}
	})
	return records
}

func (s *chaosTxnState) positionList() []any {
	out := []any{}
	for _, tp := range s.assigned {
		out = append(out, []any{tp.topic, tp.partition, s.positions[tp]})
	}
	return out
}

// commitOffsets: kadm.Client.CommitOffsets within 5 s (Java's commitSync(offsets, 5 s)); a timeout
// or a retriable Kafka error is `retriable`.
func (s *chaosTxnState) commitOffsets(req map[string]any) (error, string) {
	offsets := kadm.Offsets{}
	list, _ := req["offsets"].([]any)
	for _, o := range list {
		item, _ := o.([]any)
		if len(item) != 3 {
			return fmt.Errorf("an offset is [topic, partition, offset], not %v", o), "fatal"
		}
		offsets.Add(kadm.Offset{Topic: fmt.Sprint(item[0]), Partition: int32(lineproto.Float(item[1], 0)),
			At: int64(lineproto.Float(item[2], 0)), LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := s.admin.CommitOffsets(ctx, s.group, offsets)
	if err == nil {
		err = got.Error()
	}
	if err == nil {
		return nil, ""
	}
	if lineproto.IsTimeout(err) || kerr.IsRetriable(err) {
		return err, "retriable"
	}
	return err, "abortable"
}
