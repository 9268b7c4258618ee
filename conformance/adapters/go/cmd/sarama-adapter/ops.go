package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/IBM/sarama"

	"brokeremu/goadapters/internal/lineproto"
)

var ops = map[string]func(*lineproto.Run, lineproto.Step) lineproto.Outcome{
	"produce":                        produce,
	"produce_pipelined":              producePipelined,
	"configure_producer":             configureProducer,
	"poll":                           poll,
	"close":                          closeStep,
	"admin_list_topics":              adminListTopics,
	"committed":                      clientStep(committed),
	"end_offsets":                    clientStep(listed(func(args map[string]any) int64 { return sarama.OffsetNewest })),
	"beginning_offsets":              clientStep(listed(func(args map[string]any) int64 { return sarama.OffsetOldest })),
	"offsets_for_times":              clientStep(listed(func(args map[string]any) int64 { return lineproto.ArgInt(args, "timestamp_ms", 0) })),
	"list_topics":                    clientStep(listTopics),
	"partitions_for":                 clientStep(partitionsFor),
	"commit_sync":                    clientStep(commitSync),
	"transaction":                    transaction,
	"txn_error_probe":                txnErrorProbe,
	"txn_zombie":                     txnZombie,
	"txn_abort_then_commit":          txnAbortThenCommit,
	"read_committed_behind_open_txn": readCommittedBehindOpenTxn,
	"create_topics":                  createTopics,
	"delete_records":                 deleteRecords,
	"join_group_held":                joinGroupHeld,
}

// closeSoon closes something without letting a black-holed connection hold the next step up.
func closeSoon(name string, closer func() error) {
	done := make(chan struct{})
	go func() { _ = closer(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		fmt.Fprintf(os.Stderr, "sarama-adapter: %s Close() had not returned after 5 s; left behind\n", name)
	}
}

// newClient: sarama.NewClient (it loads the cluster's metadata from the bootstrap brokers).
func newClient(run *lineproto.Run, cfg *sarama.Config) (sarama.Client, error) {
	return sarama.NewClient(run.Brokers(), cfg)
}

func message(args map[string]any) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{Topic: lineproto.ArgStr(args, "topic", "t"),
		Partition: int32(lineproto.ArgInt(args, "partition", 0))}
	if v := lineproto.ArgBytes(args, "value"); v != nil {
		m.Value = sarama.ByteEncoder(v)
	}
	if k := lineproto.ArgBytes(args, "key"); k != nil {
		m.Key = sarama.ByteEncoder(k)
	}
	if _, ok := args["timestamp_ms"]; ok && args["timestamp_ms"] != nil {
		m.Timestamp = time.UnixMilli(lineproto.ArgInt(args, "timestamp_ms", 0))
	}
	return m
}

// producerConfig: records go to the partition the step names (sarama.NewManualPartitioner).
func producerConfig(run *lineproto.Run, args map[string]any) *sarama.Config {
	cfg := config(run)
	if _, ok := args["partition"]; ok && args["partition"] != nil {
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
	}
	return cfg
}

// produce: count SyncProducer.SendMessage calls; value: the last offset. Nothing bounds a send
// but sarama's own retries (Producer.Retry.Max, Metadata.Retry.Max) and Net.ReadTimeout.
func produce(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	run = run.WithConfig(lineproto.ArgConfig(step.Args))
	start := time.Now()
	client, err := newClient(run, producerConfig(run, step.Args))
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("client", client.Close)
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("producer", producer.Close)
	topic := lineproto.ArgStr(step.Args, "topic", "t")
	if lineproto.ArgBool(step.Args, "warm_up", true) {
		if _, err := client.Partitions(topic); err != nil {
			fmt.Fprintf(os.Stderr, "sarama-adapter: warm-up %s: %v\n", topic, err)
		}
	}
	start = time.Now()
	var offset int64 = -1
	for i := int64(0); i < lineproto.ArgInt(step.Args, "count", 1); i++ {
		if _, offset, err = producer.SendMessage(message(step.Args)); err != nil {
			return failed(step.Kind, start, err)
		}
	}
	return lineproto.Ok(step.Kind, time.Since(start), offset)
}

// producePipelined: count messages into an AsyncProducer (gap_s apart), then every Successes /
// Errors answer read.
func producePipelined(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	client, err := newClient(run, producerConfig(run, step.Args))
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("client", client.Close)
	producer, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("producer", producer.Close)
	_, _ = client.Partitions(lineproto.ArgStr(step.Args, "topic", "t"))
	count := int(lineproto.ArgInt(step.Args, "count", 2))
	start = time.Now()
	for i := 0; i < count; i++ {
		producer.Input() <- message(step.Args)
		time.Sleep(lineproto.Seconds(lineproto.ArgFloat(step.Args, "gap_s", 0)))
	}
	offsets := []any{}
	for len(offsets) < count {
		select {
		case m := <-producer.Successes():
			offsets = append(offsets, m.Offset)
		case pe := <-producer.Errors():
			return failed(step.Kind, start, pe)
		}
	}
	return lineproto.Ok(step.Kind, time.Since(start), offsets)
}

// configureProducer: sarama.Config.Validate, as NewSyncProducer runs it; a refused config is the outcome.
func configureProducer(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	if err := config(run).Validate(); err != nil {
		return failed(step.Kind, start, err)
	}
	return lineproto.Ok(step.Kind, time.Since(start), nil)
}

func startOffset(args map[string]any) int64 {
	switch v := args["offset"].(type) {
	case float64:
		return int64(v)
	case string:
		if v == "latest" {
			return sarama.OffsetNewest
		}
	}
	return sarama.OffsetOldest
}

// poll: Consumer.ConsumePartition, then the messages that arrive before the step's deadline
// (a select on Messages() with a timer, the way a sarama application waits); value: their number.
// Errors() is logged, not an outcome: the partition consumer goes on retrying by itself.
func poll(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	client, err := newClient(run, config(run))
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("client", client.Close)
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("consumer", consumer.Close)
	d, _ := step.Timeout()
	start = time.Now()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	pc, err := consumer.ConsumePartition(lineproto.ArgStr(step.Args, "topic", "t"),
		int32(lineproto.ArgInt(step.Args, "partition", 0)), startOffset(step.Args))
	if err != nil {
		return failed(step.Kind, start, err)
	}
	defer pc.AsyncClose()
	n := 0
	for {
		select {
		case <-pc.Messages():
			n++
			continue
		case ce := <-pc.Errors():
			// informational: the PartitionConsumer retries by itself (Consumer.Retry.Backoff),
			// as a sarama application that logs Errors() and keeps reading sees it
			fmt.Fprintf(os.Stderr, "sarama-adapter: poll: %v\n", ce)
			continue
		case <-deadline.C:
		}
		break
	}
	return lineproto.Ok(step.Kind, time.Since(start), n)
}

// closeStep: Consumer.Close() (no deadline of its own: the step's is the application's, lineproto.WithinDeadline)
// with a fetch in flight (a short wait first).
func closeStep(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	client, err := newClient(run, config(run))
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("client", client.Close)
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	if _, err := consumer.ConsumePartition(lineproto.ArgStr(step.Args, "topic", "t"),
		int32(lineproto.ArgInt(step.Args, "partition", 0)), sarama.OffsetOldest); err != nil {
		return failed(step.Kind, start, err)
	}
	time.Sleep(lineproto.Seconds(lineproto.ArgFloat(step.Args, "poll_first_s", 0.3)))
	return lineproto.Timed(step.Kind, lineproto.WithinDeadline(step, func() (any, error) { return nil, consumer.Close() }), errorName)
}

// adminListTopics: ClusterAdmin.ListTopics (Metadata for all topics, then DescribeConfigs),
// repeat times on one admin, pause_s (real seconds) apart. It takes no deadline.
func adminListTopics(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	client, err := newClient(run, config(run))
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		closeSoon("client", client.Close)
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("admin", admin.Close)
	rounds := lineproto.ArgInt(step.Args, "repeat", 1)
	var names []any
	for i := int64(0); i < rounds; i++ {
		if i > 0 {
			time.Sleep(lineproto.Seconds(lineproto.ArgFloat(step.Args, "pause_s", 0)))
		}
		start = time.Now()
		topics, err := admin.ListTopics()
		if err != nil {
			o := failed(step.Kind, start, err)
			msg := "call " + strconv.FormatInt(i+1, 10) + " of " + strconv.FormatInt(rounds, 10) + ": " + *o.ErrorMessage
			o.ErrorMessage = &msg
			return o
		}
		list := make([]string, 0, len(topics))
		for name := range topics {
			list = append(list, name)
		}
		names = lineproto.Sorted(list)
	}
	return lineproto.Ok(step.Kind, time.Since(start), names)
}

type clientCall func(client sarama.Client, cfg *sarama.Config, args map[string]any) (any, error)

// clientStep: one call on a fresh sarama client, timed around it. sarama's calls take no deadline:
// a step's deadline is the application's (lineproto.WithinDeadline), and it covers creating the
// client too, since sarama.NewClient is itself a Metadata call (a list_topics whose Metadata is
// black-holed blocks there). Without a deadline, or warmed up (the call once, untimed, on the same
// client first), the client is created before the timed call and a client that cannot be created
// is the outcome.
func clientStep(call clientCall) func(*lineproto.Run, lineproto.Step) lineproto.Outcome {
	return func(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
		start := time.Now()
		cfg := config(run)
		_, deadline := step.Timeout()
		if deadline && !lineproto.ArgBool(step.Args, "warm_up", false) {
			return lineproto.Timed(step.Kind, lineproto.WithinDeadline(step, func() (any, error) {
				client, err := newClient(run, cfg)
				if err != nil {
					return nil, err
				}
				defer closeSoon("client", client.Close)
				return call(client, cfg, step.Args)
			}), errorName)
		}
		client, err := newClient(run, cfg)
		if err != nil {
			return notCreated(step.Kind, start, err)
		}
		defer closeSoon("client", client.Close)
		if lineproto.ArgBool(step.Args, "warm_up", false) {
			_, _ = call(client, cfg, step.Args)
		}
		return lineproto.Timed(step.Kind, lineproto.WithinDeadline(step, func() (any, error) { return call(client, cfg, step.Args) }),
			errorName)
	}
}

// committed: ClusterAdmin.ListConsumerGroupOffsets (FindCoordinator, OffsetFetch); value: the offset or null.
func committed(client sarama.Client, _ *sarama.Config, args map[string]any) (any, error) {
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, err
	}
	topic, p := lineproto.ArgStr(args, "topic", "t"), int32(lineproto.ArgInt(args, "partition", 0))
	resp, err := admin.ListConsumerGroupOffsets(lineproto.ArgStr(args, "group", "cg"), map[string][]int32{topic: {p}})
	if err != nil {
		return nil, err
	}
	if resp.Err != sarama.ErrNoError {
		return nil, resp.Err
	}
	block := resp.GetBlock(topic, p)
	if block == nil {
		return nil, nil
	}
	if block.Err != sarama.ErrNoError {
		return nil, block.Err
	}
	if block.Offset < 0 {
		return nil, nil
	}
	return block.Offset, nil
}

// listed: Client.GetOffset(topic, partition, time) for each requested partition (OffsetNewest,
// OffsetOldest or a timestamp); value: {"partition": offset} (-1: null).
func listed(at func(map[string]any) int64) clientCall {
	return func(client sarama.Client, _ *sarama.Config, args map[string]any) (any, error) {
		topic := lineproto.ArgStr(args, "topic", "t")
		out := map[string]any{}
		for _, p := range lineproto.ArgPartitions(args) {
			off, err := client.GetOffset(topic, p, at(args))
			if err != nil {
				return nil, err
			}
			if off < 0 {
				out[strconv.Itoa(int(p))] = nil
			} else {
				out[strconv.Itoa(int(p))] = off
			}
		}
		return out, nil
	}
}

// listTopics: Client.RefreshMetadata() (all topics), then Client.Topics().
func listTopics(client sarama.Client, _ *sarama.Config, _ map[string]any) (any, error) {
	if err := client.RefreshMetadata(); err != nil {
		return nil, err
	}
	names, err := client.Topics()
	if err != nil {
		return nil, err
	}
	return lineproto.Sorted(names), nil
}

// partitionsFor: Client.RefreshMetadata(topic), then Client.Partitions(topic).
func partitionsFor(client sarama.Client, _ *sarama.Config, args map[string]any) (any, error) {
	topic := lineproto.ArgStr(args, "topic", "t")
	if err := client.RefreshMetadata(topic); err != nil {
		return nil, err
	}
	parts, err := client.Partitions(topic)
	if err != nil {
		return nil, err
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	ids := []any{}
	for _, p := range parts {
		ids = append(ids, p)
	}
	return ids, nil
}

// commitSync: an OffsetCommit (generation -1, as an assigned consumer commits) to the group's
// coordinator: Client.Coordinator, then Broker.CommitOffset.
func commitSync(client sarama.Client, cfg *sarama.Config, args map[string]any) (any, error) {
	group := lineproto.ArgStr(args, "group", "cg")
	coordinator, err := client.Coordinator(group)
	if err != nil {
		return nil, err
	}
	topic, p := lineproto.ArgStr(args, "topic", "t"), int32(lineproto.ArgInt(args, "partition", 0))
	req := sarama.NewOffsetCommitRequest(cfg, group)
	req.AddBlock(topic, p, lineproto.ArgInt(args, "offset", 0), 0, "")
	resp, err := coordinator.CommitOffset(req)
	if err != nil {
		return nil, err
	}
	if kerr, ok := resp.Errors[topic][p]; ok && !errors.Is(kerr, sarama.ErrNoError) {
		return nil, kerr
	}
	return nil, nil
}
