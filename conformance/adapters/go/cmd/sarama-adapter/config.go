package main

import (
	"strings"
	"time"

	"github.com/IBM/sarama"

	"brokeremu/goadapters/internal/lineproto"
)

// scale: how much the run is sped up ("adapter.scale", set by the Python adapter); sarama's own
// fixed timers (backoffs, metadata refresh, Admin.Timeout) are divided by it like the scenario's.
func scale(run *lineproto.Run) float64 {
	s := lineproto.Float(run.Config["adapter.scale"], 1)
	if s <= 0 {
		return 1
	}
	return s
}

func own(run *lineproto.Run, d time.Duration) time.Duration {
	return max(time.Duration(float64(d)/scale(run)), time.Millisecond)
}

// config maps the run's Kafka settings to a sarama.Config:
//
//	request.timeout.ms                  -> Net.ReadTimeout and Net.WriteTimeout (each read/write of a
//	                                       request, every API alike), Producer.Timeout (Produce's timeout_ms)
//	socket.connection.setup.timeout.ms  -> Net.DialTimeout
//	retries                             -> Producer.Retry.Max (sarama's own 3 otherwise)
//	retry.backoff.ms                    -> Producer.Retry.Backoff, Metadata.Retry.Backoff, Admin.Retry.Backoff
//	acks, enable.idempotence            -> Producer.RequiredAcks, Producer.Idempotent (with Net.MaxOpenRequests=1)
//	linger.ms                           -> Producer.Flush.Frequency
//	max.request.size                    -> Producer.MaxMessageBytes
//	fetch.max.wait.ms                   -> Consumer.MaxWaitTime
//	max.partition.fetch.bytes           -> Consumer.Fetch.Default / Max
//	session.timeout.ms, heartbeat.interval.ms, max.poll.interval.ms
//	                                    -> Consumer.Group.Session.Timeout, Heartbeat.Interval, Rebalance.Timeout
//
//	security.protocol, sasl.*           -> Net.SASL (sasl.go)
//
// delivery.timeout.ms, max.block.ms and default.api.timeout.ms have no sarama setting.
func config(run *lineproto.Run) *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = run.ClientID
	// sarama's own defaults, scaled, for what the run does not set: Net.*Timeout 30 s, Producer.Timeout 10 s
	c.Net.ReadTimeout = run.Ms("request.timeout.ms", own(run, 30*time.Second))
	c.Net.WriteTimeout = c.Net.ReadTimeout
	c.Net.DialTimeout = run.Ms("socket.connection.setup.timeout.ms", own(run, 30*time.Second))
	c.Producer.Timeout = run.Ms("request.timeout.ms", own(run, 10*time.Second))
	backoff := run.Ms("retry.backoff.ms", own(run, 100*time.Millisecond))
	c.Producer.Retry.Backoff = backoff
	c.Metadata.Retry.Backoff = run.Ms("retry.backoff.ms", own(run, 250*time.Millisecond))
	c.Admin.Retry.Backoff = backoff
	c.Admin.Timeout = own(run, 3*time.Second)
	c.Metadata.RefreshFrequency = own(run, 10*time.Minute)
	c.Consumer.Retry.Backoff = own(run, 2*time.Second)
	c.Consumer.Offsets.Retry.Max = 3
	if run.Has("retries") {
		c.Producer.Retry.Max = run.Int("retries", 3)
	}
	producerAcks(run, c)
	saslConfig(run, c)
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Producer.Flush.Frequency = run.Ms("linger.ms", 0)
	if run.Has("max.request.size") {
		c.Producer.MaxMessageBytes = run.Int("max.request.size", 1_000_000)
	}
	c.Producer.Compression = compression(run.Str("compression.type", "none"))
	c.Consumer.MaxWaitTime = max(run.Ms("fetch.max.wait.ms", 500*time.Millisecond), time.Millisecond)
	c.Consumer.Return.Errors = true
	if run.Has("max.partition.fetch.bytes") {
		c.Consumer.Fetch.Default = int32(run.Int("max.partition.fetch.bytes", 1<<20))
		c.Consumer.Fetch.Max = int32(run.Int("fetch.max.bytes", 50<<20))
	}
	if run.Has("session.timeout.ms") {
		c.Consumer.Group.Session.Timeout = run.Ms("session.timeout.ms", 0)
	}
	if run.Has("heartbeat.interval.ms") {
		c.Consumer.Group.Heartbeat.Interval = run.Ms("heartbeat.interval.ms", 0)
	}
	if run.Has("max.poll.interval.ms") {
		c.Consumer.Group.Rebalance.Timeout = run.Ms("max.poll.interval.ms", 0)
	}
	return c
}

// producerAcks: acks=all is WaitForAll, idempotent unless enable.idempotence=false (as Kafka 3+);
// sarama's idempotent producer needs Net.MaxOpenRequests=1 and at least one retry.
func producerAcks(run *lineproto.Run, c *sarama.Config) {
	acks := run.Str("acks", "all")
	switch acks {
	case "0":
		c.Producer.RequiredAcks = sarama.NoResponse
	case "1":
		c.Producer.RequiredAcks = sarama.WaitForLocal
	default:
		c.Producer.RequiredAcks = sarama.WaitForAll
	}
	if run.Bool("enable.idempotence", acks == "all" || acks == "-1") && c.Producer.RequiredAcks == sarama.WaitForAll &&
		c.Producer.Retry.Max > 0 {
		c.Producer.Idempotent = true
		c.Net.MaxOpenRequests = 1
	}
}

func compression(name string) sarama.CompressionCodec {
	switch strings.ToLower(name) {
	case "gzip":
		return sarama.CompressionGZIP
	case "snappy":
		return sarama.CompressionSnappy
	case "lz4":
		return sarama.CompressionLZ4
	case "zstd":
		return sarama.CompressionZSTD
	}
	return sarama.CompressionNone
}
