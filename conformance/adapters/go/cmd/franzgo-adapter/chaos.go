package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"brokeremu/goadapters/internal/lineproto"
)

// Failover chaos in real time (conformance/chaos/realtime.py): one producer or one consumer held
// across calls, driven a record at a time; the commands are those of the Java program
// (conformance/adapters/java/src/main/java/brokeremu/adapter/Chaos.java).
type chaosState struct {
	producer *kgo.Client
	consumer *kgo.Client
	topic    string
	outcomes lineproto.Outcomes
}

var chaos chaosState

func (franz) Command(cmd string, req map[string]any) map[string]any {
	if strings.HasPrefix(cmd, "chaos_txn_") { // the transactional load (chaostxn.go)
		return chaosTxnCommand(cmd, req)
	}
	ok := map[string]any{"ok": true}
	switch cmd {
	case "chaos_producer":
		cl, err := kgo.NewClient(append(producerOpts(lineproto.RunOf(req)), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
		if err != nil {
			return map[string]any{"fatal": "kgo.NewClient: " + err.Error()}
		}
		chaos.producer, chaos.topic = cl, fmt.Sprint(req["topic"])
		return ok
	case "chaos_send":
		n := int64(lineproto.Float(req["n"], 0))
		value, _ := req["value"].([]byte)
		record := &kgo.Record{Topic: chaos.topic, Partition: int32(lineproto.Float(req["partition"], 0)), Value: value}
		chaos.producer.Produce(context.Background(), record, func(r *kgo.Record, err error) {
			if err != nil {
				name, msg := errorName(err)
				chaos.outcomes.Add(n, nil, name+": "+msg)
			} else {
				chaos.outcomes.Add(n, r.Offset, nil)
			}
		})
		return ok
	case "chaos_outcomes":
		return map[string]any{"outcomes": chaos.outcomes.Drain()}
	case "chaos_finish":
		settle := time.Duration(lineproto.Float(req["settle_ms"], 5000)) * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), settle)
		defer cancel()
		if err := chaos.producer.Flush(ctx); err != nil {
			logf("chaos flush: %v", err)
		}
		chaos.producer.Close()
		return map[string]any{"outcomes": chaos.outcomes.Drain()}
	case "chaos_consumer":
		topic := fmt.Sprint(req["topic"])
		parts := map[int32]kgo.Offset{}
		for p := 0; p < int(lineproto.Float(req["partitions"], 1)); p++ {
			parts[int32(p)] = kgo.NewOffset().AtStart()
		}
		cl, err := kgo.NewClient(append(consumerOpts(lineproto.RunOf(req)),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))...)
		if err != nil {
			return map[string]any{"fatal": "kgo.NewClient: " + err.Error()}
		}
		chaos.consumer = cl
		return ok
	case "chaos_poll":
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(lineproto.Float(req["timeout_ms"], 200))*time.Millisecond)
		defer cancel()
		records := []any{}
		chaos.consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			records = append(records, []any{r.Partition, r.Offset, r.Value})
		})
		return map[string]any{"records": records}
	case "chaos_close":
		chaos.consumer.Close()
		return ok
	}
	return map[string]any{"fatal": "unknown cmd " + cmd}
}
