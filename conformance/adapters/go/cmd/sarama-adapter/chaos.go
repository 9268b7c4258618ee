package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"brokeremu/goadapters/internal/lineproto"
)

// Failover chaos in real time (conformance/chaos/realtime.py): one AsyncProducer or one Consumer
// held across calls, driven a record at a time; the commands are those of the Java program
// (conformance/adapters/java/src/main/java/brokeremu/adapter/Chaos.java). sarama has no delivery
// timeout: a record fails once Producer.Retry.Max retries are spent.
type chaosState struct {
	producer sarama.AsyncProducer
	pending  sync.WaitGroup
	consumer sarama.Consumer
	records  chan []any
	topic    string
	outcomes lineproto.Outcomes
}

var chaos chaosState

func (saramaClient) Command(cmd string, req map[string]any) map[string]any {
	ok := map[string]any{"ok": true}
	run := lineproto.RunOf(req)
	switch cmd {
	case "chaos_producer":
		cfg := config(run)
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		p, err := sarama.NewAsyncProducer(run.Brokers(), cfg)
		if err != nil {
			return map[string]any{"fatal": "sarama.NewAsyncProducer: " + err.Error()}
		}
		chaos.producer, chaos.topic = p, fmt.Sprint(req["topic"])
		go collect(p)
		return ok
	case "chaos_send":
		value, _ := req["value"].([]byte)
		chaos.pending.Add(1)
		chaos.producer.Input() <- &sarama.ProducerMessage{Topic: chaos.topic, Partition: int32(lineproto.Float(req["partition"], 0)),
			Value: sarama.ByteEncoder(value), Metadata: int64(lineproto.Float(req["n"], 0))}
		return ok
	case "chaos_outcomes":
		return map[string]any{"outcomes": chaos.outcomes.Drain()}
	case "chaos_finish":
		done := make(chan struct{})
		go func() { chaos.pending.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Duration(lineproto.Float(req["settle_ms"], 5000)) * time.Millisecond):
		}
		closeSoon("AsyncProducer", chaos.producer.Close)
		return map[string]any{"outcomes": chaos.outcomes.Drain()}
	case "chaos_consumer":
		c, err := sarama.NewConsumer(run.Brokers(), config(run))
		if err != nil {
			return map[string]any{"fatal": "sarama.NewConsumer: " + err.Error()}
		}
		chaos.consumer, chaos.records = c, make(chan []any, 1<<16)
		for p := 0; p < int(lineproto.Float(req["partitions"], 1)); p++ {
			pc, err := c.ConsumePartition(fmt.Sprint(req["topic"]), int32(p), sarama.OffsetOldest)
			if err != nil {
				return map[string]any{"fatal": "ConsumePartition: " + err.Error()}
			}
			go func() {
				for m := range pc.Messages() {
					chaos.records <- []any{m.Partition, m.Offset, m.Value}
				}
			}()
			go func() {
				for e := range pc.Errors() {
					fmt.Fprintf(os.Stderr, "sarama-adapter: chaos consumer: %v\n", e)
				}
			}()
		}
		return ok
	case "chaos_poll":
		records := []any{}
		wait := time.After(time.Duration(lineproto.Float(req["timeout_ms"], 200)) * time.Millisecond)
		for {
			select {
			case r := <-chaos.records:
				records = append(records, r)
				if len(records) < 10_000 {
					continue
				}
			case <-wait:
			}
			return map[string]any{"records": records}
		}
	case "chaos_close":
		closeSoon("Consumer", chaos.consumer.Close)
		return ok
	}
	return map[string]any{"fatal": "unknown cmd " + cmd}
}

func collect(p sarama.AsyncProducer) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m := range p.Successes() {
			chaos.outcomes.Add(m.Metadata.(int64), m.Offset, nil)
			chaos.pending.Done()
		}
	}()
	go func() {
		defer wg.Done()
		for e := range p.Errors() {
			name, msg := errorName(e.Err)
			chaos.outcomes.Add(e.Msg.Metadata.(int64), nil, name+": "+msg)
			chaos.pending.Done()
		}
	}()
	wg.Wait()
}
