package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
// ProduceSync; value: [{"partition", "offset"}].
func produceBatch(run *lineproto.Run, step lineproto.Step) (any, error) {
	run = run.WithConfig(lineproto.ArgConfig(step.Args))
	cl, err := kgo.NewClient(append(producerOpts(run), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return nil, err
	}
	defer closeSoon(cl)
	topic := lineproto.ArgStr(step.Args, "topic", "t")
	var records []*kgo.Record
	list, _ := step.Args["records"].([]any)
	for i, item := range list {
		args, _ := item.(map[string]any)
		args["topic"] = topic
		if _, ok := args["partition"]; !ok {
			args["partition"] = float64(i % 3)
		}
		records = append(records, record(args))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	results := cl.ProduceSync(ctx, records...)
	if err := results.FirstErr(); err != nil {
		return nil, err
	}
	out := []any{}
	for _, r := range results {
		out = append(out, map[string]any{"partition": r.Record.Partition, "offset": r.Record.Offset})
	}
	return out, nil
}

func recordValue(r *kgo.Record) map[string]any {
	return map[string]any{"partition": r.Partition, "offset": r.Offset, "key": r.Key, "value": r.Value,
		"timestamp": r.Timestamp.UnixMilli()}
}

// readPartition: count records of one partition from offset (earliest, latest, a number),
// polling for at most max_s seconds.
func readPartition(run *lineproto.Run, step lineproto.Step) (any, error) {
	run = run.WithConfig(lineproto.ArgConfig(step.Args))
	topic := lineproto.ArgStr(step.Args, "topic", "t")
	parts := map[string]map[int32]kgo.Offset{topic: {int32(lineproto.ArgInt(step.Args, "partition", 0)): startOffset(step.Args)}}
	cl, err := kgo.NewClient(append(consumerOpts(run), kgo.ConsumePartitions(parts))...)
	if err != nil {
		return nil, err
	}
	defer closeSoon(cl)
	ctx, cancel := context.WithTimeout(context.Background(), lineproto.Seconds(lineproto.ArgFloat(step.Args, "max_s", 20)))
	defer cancel()
	want := int(lineproto.ArgInt(step.Args, "count", 1))
	got := []any{}
	for len(got) < want {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read %d of %d records before max_s: %w", len(got), want, ctx.Err())
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return nil, errs[0].Err
		}
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, recordValue(r)) })
	}
	return got, nil
}

// member is one group member consuming "topic" in "group", committing what it polled
// (CommitUncommittedOffsets) after each poll.
type member struct {
	cl       *kgo.Client
	mu       sync.Mutex
	assigned []int32
	records  []any
}

func newMember(run *lineproto.Run, group, topic string) (*member, error) {
	m := &member{}
	opts := append(consumerOpts(run), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// franz-go's default balancer is cooperative-sticky: the callbacks carry what is added or taken away
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { m.change(a[topic], nil) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			_ = cl.CommitUncommittedOffsets(ctx)
			m.change(nil, r[topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) { m.change(nil, l[topic]) }))
	cl, err := kgo.NewClient(opts...)
	m.cl = cl
	return m, err
}

func (m *member) change(added, removed []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := slices.DeleteFunc(slices.Clone(m.assigned), func(p int32) bool { return slices.Contains(removed, p) })
	for _, p := range added {
		if !slices.Contains(now, p) {
			now = append(now, p)
		}
	}
	slices.Sort(now)
	m.assigned = now
}

func (m *member) assignment() []any {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []any{}
	for _, p := range m.assigned {
		out = append(out, p)
	}
	return out
}

// consume polls until count records or until done returns true; commits after every poll.
func (m *member) consume(ctx context.Context, count int, done func() bool) error {
	for len(m.records) < count && !done() {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fetches := m.cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return fmt.Errorf("consumed %d of %d records: %w", len(m.records), count, ctx.Err())
		}
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				return fe.Err
			}
		}
		fetches.EachRecord(func(r *kgo.Record) { m.records = append(m.records, recordValue(r)) })
		if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
			return err
		}
	}
	return nil
}

// groupTakeover: a first member consumes "first" records and commits them; a second member
// joins (the group rebalances between the two), the first leaves (Close), the values of
// "then_produce" are produced (partition i % 3), and the second, now owning every partition,
// consumes them from the committed offsets.
// Value: {"first": {assignment, records}, "second": {assignment, assignment_shared, records}}.
func groupTakeover(run *lineproto.Run, step lineproto.Step) (any, error) {
	group, topic := lineproto.ArgStr(step.Args, "group", "gg"), lineproto.ArgStr(step.Args, "topic", "t")
	ctx, cancel := context.WithTimeout(context.Background(), lineproto.Seconds(lineproto.ArgFloat(step.Args, "max_s", 60)))
	defer cancel()
	first, err := newMember(run, group, topic)
	if err != nil {
		return nil, err
	}
	defer closeSoon(first.cl)
	if err := first.consume(ctx, int(lineproto.ArgInt(step.Args, "first", 1)), func() bool { return false }); err != nil {
		return nil, fmt.Errorf("first member: %w", err)
	}
	firstAssigned := first.assignment()
	second, err := newMember(run, group, topic)
	if err != nil {
		return nil, err
	}
	defer closeSoon(second.cl)
	// the second joins while the first still polls: both share the partitions
	shared := func() bool { return len(second.assignment()) > 0 && len(first.assignment()) > 0 }
	polled := make(chan struct{})
	go func() { _ = first.consume(ctx, 1<<30, shared); close(polled) }()
	for !shared() && ctx.Err() == nil {
		if err := second.consume(ctx, len(second.records)+1, shared); err != nil {
			return nil, fmt.Errorf("second member joining: %w", err)
		}
	}
	<-polled
	sharedAssignment := second.assignment()
	first.cl.Close() // leaves the group: the second takes every partition over
	after, err := produceValues(run, topic, step.Args["then_produce"])
	if err != nil {
		return nil, fmt.Errorf("then_produce: %w", err)
	}
	if err := second.consume(ctx, len(second.records)+after, func() bool { return false }); err != nil {
		return nil, fmt.Errorf("second member: %w", err)
	}
	return map[string]any{
		"first":  map[string]any{"assignment": firstAssigned, "records": first.records},
		"second": map[string]any{"assignment_shared": sharedAssignment, "assignment": second.assignment(), "records": second.records},
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
