package main

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"brokeremu/goadapters/internal/lineproto"
)

// stepContext is the step's deadline as a context (context.Background when it has none).
func stepContext(step lineproto.Step) (context.Context, context.CancelFunc) {
	if d, ok := step.Timeout(); ok {
		return context.WithTimeout(context.Background(), d)
	}
	return context.WithCancel(context.Background())
}

// closeSoon closes a client without letting a black-holed connection hold the next step up.
func closeSoon(cl *kgo.Client) {
	done := make(chan struct{})
	go func() { cl.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		logf("Close() had not returned after 5 s; left behind")
	}
}

func record(args map[string]any) *kgo.Record {
	r := &kgo.Record{Topic: lineproto.ArgStr(args, "topic", "t"), Key: lineproto.ArgBytes(args, "key"),
		Value: lineproto.ArgBytes(args, "value")}
	if _, ok := args["partition"]; ok && args["partition"] != nil {
		r.Partition = int32(lineproto.ArgInt(args, "partition", 0))
	}
	if ts, ok := args["timestamp_ms"]; ok && ts != nil {
		r.Timestamp = time.UnixMilli(lineproto.ArgInt(args, "timestamp_ms", 0))
	}
	return r
}

// partitioned: records go to the partition the step names (kgo.ManualPartitioner), else hashed.
func partitioned(args map[string]any) kgo.Opt {
	if _, ok := args["partition"]; ok && args["partition"] != nil {
		return kgo.RecordPartitioner(kgo.ManualPartitioner())
	}
	return kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil))
}

// produceContext: max.block.ms, when the run sets it, is the context handed to Produce: it
// fails a record franz-go has not yet written in a request (waiting for metadata); franz-go
// has no separate bound on that wait.
func produceContext(run *lineproto.Run) (context.Context, context.CancelFunc) {
	if run.Has("max.block.ms") {
		return context.WithTimeout(context.Background(), run.Ms("max.block.ms", 0))
	}
	return context.WithCancel(context.Background())
}

// reportGuard: how long to wait for a promise at most (RecordDeliveryTimeout bounds it; this only guards a hang).
func reportGuard(run *lineproto.Run) time.Duration {
	return 3*run.Ms("delivery.timeout.ms", 120*time.Second) + run.Ms("max.block.ms", 60*time.Second) + 10*time.Second
}

type report struct {
	rec *kgo.Record
	err error
	at  time.Time
}

func send(ctx context.Context, cl *kgo.Client, r *kgo.Record) chan report {
	ch := make(chan report, 1)
	cl.Produce(ctx, r, func(r *kgo.Record, err error) { ch <- report{r, err, time.Now()} })
	return ch
}

func await(ch chan report, guard time.Duration) report {
	select {
	case rep := <-ch:
		return rep
	case <-time.After(guard):
		return report{err: errNoReport, at: time.Now()}
	}
}

var errNoReport = errors.New("no promise called within the adapter's guard (3 x delivery.timeout.ms + max.block.ms + 10 s)")

// warmUp loads the topic's metadata before the timed call (as the Java adapter's partitionsFor).
func warmUp(cl *kgo.Client, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).Metadata(ctx, topic); err != nil {
		logf("warm-up metadata for %s: %v", topic, err)
	}
}

// produce: count records, each Produce'd and its promise awaited before the next; value: the last offset.
func produce(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	cl, err := kgo.NewClient(append(producerOpts(run.WithConfig(lineproto.ArgConfig(step.Args))), partitioned(step.Args))...)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(cl)
	if lineproto.ArgBool(step.Args, "warm_up", true) {
		warmUp(cl, lineproto.ArgStr(step.Args, "topic", "t"))
	}
	ctx, cancel := produceContext(run)
	defer cancel()
	start := time.Now()
	var last *kgo.Record
	for i := int64(0); i < lineproto.ArgInt(step.Args, "count", 1); i++ {
		rep := await(send(ctx, cl, record(step.Args)), reportGuard(run))
		if rep.err != nil {
			if rep.err == errNoReport {
				return lineproto.Failed(step.Kind, time.Since(start), "NoDeliveryReport", rep.err.Error())
			}
			name, msg := errorName(rep.err)
			return lineproto.Failed(step.Kind, rep.at.Sub(start), name, msg)
		}
		last = rep.rec
	}
	if last == nil {
		return lineproto.Ok(step.Kind, time.Since(start), nil)
	}
	return lineproto.Ok(step.Kind, time.Since(start), last.Offset)
}

// producePipelined: count Produce calls back to back (gap_s apart), then every promise awaited.
func producePipelined(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	cl, err := kgo.NewClient(append(producerOpts(run), partitioned(step.Args))...)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(cl)
	warmUp(cl, lineproto.ArgStr(step.Args, "topic", "t"))
	ctx, cancel := produceContext(run)
	defer cancel()
	start := time.Now()
	var pending []chan report
	for i := int64(0); i < lineproto.ArgInt(step.Args, "count", 2); i++ {
		pending = append(pending, send(ctx, cl, record(step.Args)))
		time.Sleep(lineproto.Seconds(lineproto.ArgFloat(step.Args, "gap_s", 0)))
	}
	offsets := []any{}
	end := start
	for _, ch := range pending {
		rep := await(ch, reportGuard(run))
		if rep.err != nil {
			name, msg := errorName(rep.err)
			return lineproto.Failed(step.Kind, rep.at.Sub(start), name, msg)
		}
		offsets = append(offsets, rep.rec.Offset)
		end = rep.at
	}
	return lineproto.Ok(step.Kind, end.Sub(start), offsets)
}

// configureProducer: kgo.NewClient with the producer options; a refused config is the outcome.
func configureProducer(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	cl, err := kgo.NewClient(producerOpts(run)...)
	if err != nil {
		return lineproto.Failed(step.Kind, time.Since(start), "ConfigException", "kgo.NewClient: "+err.Error())
	}
	elapsed := time.Since(start)
	closeSoon(cl)
	return lineproto.Ok(step.Kind, elapsed, nil)
}

func startOffset(args map[string]any) kgo.Offset {
	switch v := args["offset"].(type) {
	case float64:
		return kgo.NewOffset().At(int64(v))
	case string:
		if v == "latest" {
			return kgo.NewOffset().AtEnd()
		}
	}
	return kgo.NewOffset().AtStart()
}

// poll: a client consuming the step's partition (kgo.ConsumePartitions), PollFetches with the
// step's deadline as its context (none: an expired one, as Java's poll(0)). Value: records polled.
func poll(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	topic := lineproto.ArgStr(step.Args, "topic", "t")
	parts := map[string]map[int32]kgo.Offset{topic: {int32(lineproto.ArgInt(step.Args, "partition", 0)): startOffset(step.Args)}}
	cl, err := kgo.NewClient(append(consumerOpts(run), kgo.ConsumePartitions(parts))...)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(cl)
	d, _ := step.Timeout()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	fetches := cl.PollFetches(ctx)
	elapsed := time.Since(start)
	for _, fe := range fetches.Errors() {
		if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
			name, msg := errorName(fe.Err)
			return lineproto.Failed(step.Kind, elapsed, name, msg)
		}
	}
	return lineproto.Ok(step.Kind, elapsed, fetches.NumRecords())
}

// closeStep: Client.Close() with a fetch in flight (a short poll first); Close takes no deadline.
func closeStep(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	topic := lineproto.ArgStr(step.Args, "topic", "t")
	parts := map[string]map[int32]kgo.Offset{topic: {int32(lineproto.ArgInt(step.Args, "partition", 0)): kgo.NewOffset().AtStart()}}
	cl, err := kgo.NewClient(append(consumerOpts(run), kgo.ConsumePartitions(parts))...)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lineproto.Seconds(lineproto.ArgFloat(step.Args, "poll_first_s", 0.3)))
	cl.PollFetches(ctx)
	cancel()
	// Client.Close takes no context: the step's deadline is the application's (lineproto.WithinDeadline)
	return lineproto.Timed(step.Kind, lineproto.WithinDeadline(step, func() (any, error) { cl.Close(); return nil, nil }),
		errorName)
}

// adminListTopics: kadm.Client.ListTopics, repeat times on one client, pause_s (real seconds) apart.
func adminListTopics(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	cl, err := kgo.NewClient(commonOpts(run)...)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(cl)
	adm := newAdmin(run, cl)
	rounds := lineproto.ArgInt(step.Args, "repeat", 1)
	var names []any
	start := time.Now()
	for i := int64(0); i < rounds; i++ {
		if i > 0 {
			time.Sleep(lineproto.Seconds(lineproto.ArgFloat(step.Args, "pause_s", 0)))
		}
		ctx, cancel := stepContext(step)
		start = time.Now()
		topics, err := adm.ListTopics(ctx)
		if err == nil {
			err = topics.Error()
		}
		cancel()
		if err != nil {
			o := failed(step.Kind, start, err)
			msg := "call " + itoa(i+1) + " of " + itoa(rounds) + ": " + *o.ErrorMessage
			o.ErrorMessage = &msg
			return o
		}
		names = lineproto.Sorted(topics.Names())
	}
	return lineproto.Ok(step.Kind, time.Since(start), names)
}
