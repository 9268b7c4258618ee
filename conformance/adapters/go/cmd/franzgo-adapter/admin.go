package main

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"brokeremu/goadapters/internal/lineproto"
)

// The admin steps with a server-side deadline (conformance/scenarios_admin.py), as the Java
// program's AdminOps.java: the step's deadline is both the call's context and the request's
// TimeoutMillis (kadm.Client.SetTimeoutMillis: "the timeout to use for requests that have a
// timeout", CreateTopics' and DeleteRecords' among them), which the broker makes its own deadline.
// franz-go's own read deadline for such a request is kgo.RequestTimeoutOverhead + TimeoutMillis,
// so the context is what ends the call; kgo drops the answer of a request canceled after it was
// written and keeps the connection (brokerCxn.abandonOnCancel).
//
//	create_topics    kadm.Client.CreateTopics(ctx, partitions, replication_factor, nil, topic)
//	delete_records   kadm.Client.DeleteRecords(ctx, {topic: {partition: offset}}); value: the low watermark

func adminDeadline(run *lineproto.Run, step lineproto.Step, cl *kgo.Client) *kadm.Client {
	adm := newAdmin(run, cl)
	if d, ok := step.Timeout(); ok {
		adm.SetTimeoutMillis(int32(d.Milliseconds()))
	}
	return adm
}

func createTopics(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	cl, err := kgo.NewClient(commonOpts(run)...)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(cl)
	adm := adminDeadline(run, step, cl)
	topic := lineproto.ArgStr(step.Args, "topic", "t")
	ctx, cancel := stepContext(step)
	defer cancel()
	return lineproto.Timed(step.Kind, func() (any, error) {
		got, err := adm.CreateTopics(ctx, int32(lineproto.ArgInt(step.Args, "partitions", 1)),
			int16(lineproto.ArgInt(step.Args, "replication_factor", 1)), nil, topic)
		if err != nil {
			return nil, err
		}
		r, ok := got[topic]
		if !ok {
			return nil, fmt.Errorf("kadm answered nothing for topic %s", topic)
		}
		if r.Err != nil && r.ErrMessage != "" {
			return nil, fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
		return nil, r.Err
	}, errorName)
}

func deleteRecords(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	cl, err := kgo.NewClient(commonOpts(run)...)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer closeSoon(cl)
	adm := adminDeadline(run, step, cl)
	topic, p := lineproto.ArgStr(step.Args, "topic", "t"), int32(lineproto.ArgInt(step.Args, "partition", 0))
	offsets := kadm.Offsets{topic: {p: kadm.Offset{Topic: topic, Partition: p, At: lineproto.ArgInt(step.Args, "offset", -1), LeaderEpoch: -1}}}
	ctx, cancel := stepContext(step)
	defer cancel()
	start := time.Now()
	got, err := adm.DeleteRecords(ctx, offsets)
	elapsed := time.Since(start)
	if err == nil {
		var r kadm.DeleteRecordsResponse
		if r, err = got.On(topic, p, nil); err == nil && r.Err == nil {
			return lineproto.Ok(step.Kind, elapsed, r.LowWatermark)
		} else if err == nil {
			err = r.Err
		}
	}
	name, msg := errorName(err)
	return lineproto.Failed(step.Kind, elapsed, name, msg)
}
