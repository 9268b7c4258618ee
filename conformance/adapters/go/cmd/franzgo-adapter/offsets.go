package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"brokeremu/goadapters/internal/lineproto"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// adminCall is one call of kadm for a consumer operation; its error is the outcome.
type adminCall func(ctx context.Context, adm *kadm.Client, args map[string]any) (any, error)

// The consumer operations, by kadm's calls (franz-go's consumer has no blocking offset calls:
// a franz-go application asks kadm, given a context):
//
//	committed          kadm.Client.FetchOffsets(ctx, group)
//	end_offsets        kadm.Client.ListEndOffsets(ctx, topic)
//	beginning_offsets  kadm.Client.ListStartOffsets(ctx, topic)
//	offsets_for_times  kadm.Client.ListOffsetsAfterMilli(ctx, ms, topic)
//	list_topics        kadm.Client.ListTopics(ctx)
//	partitions_for     kadm.Client.ListTopics(ctx, topic)
//	commit_sync        kadm.Client.CommitOffsets(ctx, group, offsets)
var adminCalls = map[string]adminCall{
	"committed":         committed,
	"end_offsets":       listed(func(ctx context.Context, a *kadm.Client, t string, _ map[string]any) (kadm.ListedOffsets, error) { return a.ListEndOffsets(ctx, t) }),
	"beginning_offsets": listed(func(ctx context.Context, a *kadm.Client, t string, _ map[string]any) (kadm.ListedOffsets, error) { return a.ListStartOffsets(ctx, t) }),
	"offsets_for_times": listed(func(ctx context.Context, a *kadm.Client, t string, args map[string]any) (kadm.ListedOffsets, error) {
		return a.ListOffsetsAfterMilli(ctx, lineproto.ArgInt(args, "timestamp_ms", 0), t)
	}),
	"list_topics":    listTopics,
	"partitions_for": partitionsFor,
	"commit_sync":    commitSync,
}

// adminStep: one kadm call on a fresh client, its context the step's deadline (none: no
// deadline, kgo.RetryTimeout bounds the retries), timed around the call.
func adminStep(run *lineproto.Run, step lineproto.Step, call adminCall) lineproto.Outcome {
	cl, err := kgo.NewClient(commonOpts(run)...)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(cl)
	adm := newAdmin(run, cl)
	if lineproto.ArgBool(step.Args, "warm_up", false) {
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _ = call(wctx, adm, step.Args)
		cancel()
	}
	ctx, cancel := stepContext(step)
	defer cancel()
	return lineproto.Timed(step.Kind, func() (any, error) { return call(ctx, adm, step.Args) }, errorName)
}

func committed(ctx context.Context, adm *kadm.Client, args map[string]any) (any, error) {
	got, err := adm.FetchOffsets(ctx, lineproto.ArgStr(args, "group", "cg"))
	if err != nil {
		return nil, err
	}
	o, ok := got.Lookup(lineproto.ArgStr(args, "topic", "t"), int32(lineproto.ArgInt(args, "partition", 0)))
	if !ok {
		return nil, got.Error()
	}
	if o.Err != nil {
		return nil, o.Err
	}
	if o.At < 0 {
		return nil, nil
	}
	return o.At, nil
}

type lister func(ctx context.Context, adm *kadm.Client, topic string, args map[string]any) (kadm.ListedOffsets, error)

// listed: the requested partitions' offsets as {"partition": offset} (offset -1: null).
func listed(list lister) adminCall {
	return func(ctx context.Context, adm *kadm.Client, args map[string]any) (any, error) {
		topic := lineproto.ArgStr(args, "topic", "t")
		got, err := list(ctx, adm, topic, args)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		for _, p := range lineproto.ArgPartitions(args) {
			o, ok := got.Lookup(topic, p)
			if !ok {
				return nil, fmt.Errorf("kadm answered no offset for %s-%d", topic, p)
			}
			if o.Err != nil {
				return nil, o.Err
			}
			if o.Offset < 0 {
				out[strconv.Itoa(int(p))] = nil
			} else {
				out[strconv.Itoa(int(p))] = o.Offset
			}
		}
		return out, nil
	}
}

func listTopics(ctx context.Context, adm *kadm.Client, _ map[string]any) (any, error) {
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	return lineproto.Sorted(topics.Names()), topics.Error()
}

func partitionsFor(ctx context.Context, adm *kadm.Client, args map[string]any) (any, error) {
	topic := lineproto.ArgStr(args, "topic", "t")
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, err
	}
	detail, ok := topics[topic]
	if !ok {
		return []any{}, nil
	}
	if detail.Err != nil {
		return nil, detail.Err
	}
	ids := []any{}
	for _, p := range detail.Partitions.Numbers() {
		ids = append(ids, p)
	}
	return ids, nil
}

func commitSync(ctx context.Context, adm *kadm.Client, args map[string]any) (any, error) {
	topic := lineproto.ArgStr(args, "topic", "t")
	p := int32(lineproto.ArgInt(args, "partition", 0))
	offsets := kadm.Offsets{topic: {p: kadm.Offset{Topic: topic, Partition: p, At: lineproto.ArgInt(args, "offset", 0), LeaderEpoch: -1}}}
	got, err := adm.CommitOffsets(ctx, lineproto.ArgStr(args, "group", "cg"), offsets)
	if err != nil {
		return nil, err
	}
	return nil, got.Error()
}

// newAdmin: a kadm client whose own request timeout (TimeoutMillis of ListOffsets v10+,
// CreateTopics...: 15 s by default) is scaled with the run like franz-go's other timers.
func newAdmin(run *lineproto.Run, cl *kgo.Client) *kadm.Client {
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(own(run, 15*time.Second).Milliseconds()))
	return adm
}
