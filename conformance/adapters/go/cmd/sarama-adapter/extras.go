package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"brokeremu/goadapters/internal/lineproto"
)

// Extras are the steps beyond the conformance operations, for tests/realclients/test_go_clients.py.
var Extras = []string{"produce_batch", "read_partition", "group_takeover"}

var extraCalls = map[string]func(*lineproto.Run, lineproto.Step) (any, error){
	"produce_batch":  produceBatch,
	"read_partition": readPartition,
	"group_takeover": groupTakeover,
}

// produceBatch: every record of "records" (value, key, partition, timestamp_ms) through
// SyncProducer.SendMessages; value: [{"partition", "offset"}].
func produceBatch(run *lineproto.Run, step lineproto.Step) (any, error) {
	run = run.WithConfig(lineproto.ArgConfig(step.Args))
	cfg := config(run)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer(run.Brokers(), cfg)
	if err != nil {
		return nil, err
	}
	defer closeSoon("producer", producer.Close)
	topic := lineproto.ArgStr(step.Args, "topic", "t")
	var msgs []*sarama.ProducerMessage
	list, _ := step.Args["records"].([]any)
	for i, item := range list {
		args, _ := item.(map[string]any)
		args["topic"] = topic
		if _, ok := args["partition"]; !ok {
			args["partition"] = float64(i % 3)
		}
		msgs = append(msgs, message(args))
	}
	if err := producer.SendMessages(msgs); err != nil {
		return nil, err
	}
	out := []any{}
	for _, m := range msgs {
		out = append(out, map[string]any{"partition": m.Partition, "offset": m.Offset})
	}
	return out, nil
}

func messageValue(m *sarama.ConsumerMessage) map[string]any {
	return map[string]any{"partition": m.Partition, "offset": m.Offset, "key": m.Key, "value": m.Value,
		"timestamp": m.Timestamp.UnixMilli()}
}

// readPartition: count messages of one partition from offset, for at most max_s seconds.
func readPartition(run *lineproto.Run, step lineproto.Step) (any, error) {
	run = run.WithConfig(lineproto.ArgConfig(step.Args))
	consumer, err := sarama.NewConsumer(run.Brokers(), config(run))
	if err != nil {
		return nil, err
	}
	defer closeSoon("consumer", consumer.Close)
	pc, err := consumer.ConsumePartition(lineproto.ArgStr(step.Args, "topic", "t"),
		int32(lineproto.ArgInt(step.Args, "partition", 0)), startOffset(step.Args))
	if err != nil {
		return nil, err
	}
	defer pc.AsyncClose()
	timer := time.NewTimer(lineproto.Seconds(lineproto.ArgFloat(step.Args, "max_s", 20)))
	defer timer.Stop()
	want := int(lineproto.ArgInt(step.Args, "count", 1))
	got := []any{}
	for len(got) < want {
		select {
		case m := <-pc.Messages():
			got = append(got, messageValue(m))
		case ce := <-pc.Errors():
			return nil, ce
		case <-timer.C:
			return nil, fmt.Errorf("read %d of %d messages before max_s", len(got), want)
		}
	}
	return got, nil
}

// member is one sarama.ConsumerGroup member consuming a topic, committing every message
// (MarkMessage, then ConsumerGroupSession.Commit).
type member struct {
	group    sarama.ConsumerGroup
	topic    string
	mu       sync.Mutex
	assigned []int32
	records  []any
	failed   error
	stopped  chan struct{}
}

func (m *member) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.assigned = slices.Sorted(slices.Values(s.Claims()[m.topic]))
	return nil
}

func (m *member) Cleanup(sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.assigned = nil
	return nil
}

func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		m.mu.Lock()
		m.records = append(m.records, messageValue(msg))
		m.mu.Unlock()
		s.MarkMessage(msg, "")
		s.Commit()
	}
	return nil
}

func (m *member) state() (assigned []any, records int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.assigned {
		assigned = append(assigned, p)
	}
	return assigned, len(m.records), m.failed
}

func startMember(ctx context.Context, run *lineproto.Run, group, topic string) (*member, error) {
	cfg := config(run)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	g, err := sarama.NewConsumerGroup(run.Brokers(), group, cfg)
	if err != nil {
		return nil, err
	}
	m := &member{group: g, topic: topic, stopped: make(chan struct{})}
	go func() {
		defer close(m.stopped)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, m); err != nil {
				if err != sarama.ErrClosedConsumerGroup {
					m.mu.Lock()
					m.failed = err
					m.mu.Unlock()
				}
				return
			}
		}
	}()
	return m, nil
}

// waitFor polls cond every 50 ms until it holds or ctx ends.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// groupTakeover: as the franz-go adapter's: a first member consumes "first" messages and
// commits them, a second joins (both share the partitions), the first leaves (Close), the
// values of "then_produce" are produced, and the second, owning every partition, consumes them.
func groupTakeover(run *lineproto.Run, step lineproto.Step) (any, error) {
	group, topic := lineproto.ArgStr(step.Args, "group", "gg"), lineproto.ArgStr(step.Args, "topic", "t")
	ctx, cancel := context.WithTimeout(context.Background(), lineproto.Seconds(lineproto.ArgFloat(step.Args, "max_s", 60)))
	defer cancel()
	first, err := startMember(ctx, run, group, topic)
	if err != nil {
		return nil, err
	}
	defer closeSoon("first member", first.group.Close)
	want := int(lineproto.ArgInt(step.Args, "first", 1))
	if err := waitFor(ctx, "the first member's records", func() bool { _, n, e := first.state(); return n >= want || e != nil }); err != nil {
		return nil, err
	}
	firstAssigned, _, _ := first.state()
	second, err := startMember(ctx, run, group, topic)
	if err != nil {
		return nil, err
	}
	defer closeSoon("second member", second.group.Close)
	if err := waitFor(ctx, "both members assigned", func() bool {
		a, _, _ := first.state()
		b, _, _ := second.state()
		return len(a) > 0 && len(b) > 0
	}); err != nil {
		return nil, err
	}
	shared, _, _ := second.state()
	_ = first.group.Close()
	<-first.stopped
	_, already, _ := second.state()
	rest, err := produceValues(run, topic, step.Args["then_produce"])
	if err != nil {
		return nil, fmt.Errorf("then_produce: %w", err)
	}
	if err := waitFor(ctx, "the second member's records", func() bool {
		_, n, e := second.state()
		return n >= already+rest || e != nil
	}); err != nil {
		return nil, err
	}
	if _, _, e := second.state(); e != nil {
		return nil, e
	}
	secondAssigned, _, _ := second.state()
	first.mu.Lock()
	firstRecords := first.records
	first.mu.Unlock()
	second.mu.Lock()
	defer second.mu.Unlock()
	return map[string]any{
		"first":  map[string]any{"assignment": firstAssigned, "records": firstRecords},
		"second": map[string]any{"assignment_shared": shared, "assignment": secondAssigned, "records": second.records},
	}, nil
}

// produceValues produces each value of a list (partition i % 3) and returns how many it sent.
func produceValues(run *lineproto.Run, topic string, values any) (int, error) {
	list, _ := values.([]any)
	if len(list) == 0 {
		return 0, nil
	}
	records := []any{}
	for _, v := range list {
		records = append(records, map[string]any{"value": v})
	}
	_, err := produceBatch(run, lineproto.Step{Kind: "produce_batch", Args: map[string]any{"topic": topic, "records": records}})
	return len(list), err
}
