package main

import (
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"brokeremu/goadapters/internal/lineproto"
)

// franz-go's own defaults for what a run does not set (scaled with the run, see own):
// RequestTimeoutOverhead and ProduceRequestTimeout 10 s, RetryTimeout 30 s, DialTimeout 10 s.
const (
	defaultRequestTimeout = 10 * time.Second
	defaultRetryTimeout   = 30 * time.Second
	defaultDialTimeout    = 10 * time.Second
)

// scale is how much the run is sped up ("adapter.scale", set by the Python adapter): franz-go's
// own fixed timers (metadata ages, backoffs, idle timeout) are divided by it like the scenario's.
func scale(run *lineproto.Run) float64 {
	s := lineproto.Float(run.Config["adapter.scale"], 1)
	if s <= 0 {
		return 1
	}
	return s
}

func own(run *lineproto.Run, d time.Duration) time.Duration {
	return time.Duration(float64(d) / scale(run))
}

// backoff: retry.backoff.ms doubling up to retry.backoff.max.ms with ±20 % jitter when the run
// sets them, else franz-go's own range (250 ms to 5 s), scaled with the run.
func backoff(run *lineproto.Run) func(int) time.Duration {
	base := run.Ms("retry.backoff.ms", own(run, 250*time.Millisecond))
	ceiling := run.Ms("retry.backoff.max.ms", own(run, 5*time.Second))
	return func(tries int) time.Duration {
		d := base
		for i := 1; i < tries && d < ceiling; i++ {
			d *= 2
		}
		d = min(d, ceiling)
		return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	}
}

// kgoMinRequestTimeout: kgo refuses a RequestTimeoutOverhead or ProduceRequestTimeout under 100 ms
// (its config validation, "request timeout min overhead" and "produce timeout").
const kgoMinRequestTimeout = 100 * time.Millisecond

// requestTimeout: request.timeout.ms, else franz-go's own 10 s (scaled); a scaled value under kgo's
// floor is raised to it, and said so on stderr (only txn.init-coordinator-unreachable's 2 s, at
// scale 30, falls below: its contracts are about max.block.ms, the attempts it bounds are faster
// or slower, not the verdict).
func requestTimeout(run *lineproto.Run) time.Duration {
	d := run.Ms("request.timeout.ms", own(run, defaultRequestTimeout))
	if d < kgoMinRequestTimeout {
		logf("request.timeout.ms %v is under kgo's 100 ms floor: running with 100 ms", d)
		return kgoMinRequestTimeout
	}
	return d
}

// commonOpts: the client settings every step's client shares.
//
//	request.timeout.ms                      -> kgo.RequestTimeoutOverhead
//	default.api.timeout.ms                  -> kgo.RetryTimeout (bounds a call given no context deadline)
//	socket.connection.setup.timeout.ms      -> kgo.DialTimeout
//	retry.backoff.ms / retry.backoff.max.ms -> kgo.RetryBackoffFn
func commonOpts(run *lineproto.Run) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(run.Brokers()...),
		kgo.ClientID(run.ClientID),
		kgo.RequestTimeoutOverhead(requestTimeout(run)),
		kgo.RetryTimeout(run.Ms("default.api.timeout.ms", own(run, defaultRetryTimeout))),
		kgo.DialTimeout(run.Ms("socket.connection.setup.timeout.ms", own(run, defaultDialTimeout))),
		kgo.RetryBackoffFn(backoff(run)),
		kgo.MetadataMinAge(own(run, 5*time.Second)),
		kgo.MetadataMaxAge(own(run, 5*time.Minute)),
		kgo.ConnIdleTimeout(max(own(run, 20*time.Second), time.Second)),
	}
	if m := saslMechanism(run); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	if onRebootstrap := rebootstrapHook(run); onRebootstrap != nil {
		opts = append(opts, kgo.OnRebootstrapRequired(onRebootstrap))
	}
	if level, ok := logLevels[os.Getenv("FRANZGO_ADAPTER_LOG")]; ok { // franz-go's own log on stderr (out/adapters/franz-go.log)
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, level, func() string {
			return time.Now().Format("15:04:05.000 ") + run.ClientID + " "
		})))
	}
	return opts
}

// rebootstrapHook: metadata.recovery.strategy=rebootstrap, named by the scenario -> kgo.OnRebootstrapRequired
// handing back the run's bootstrap.servers. kgo acts on a Metadata answer of REBOOTSTRAP_REQUIRED only through
// this hook (Client.fetchMetadata, pkg/kgo/client.go): with it, kgo drops every broker it discovered and asks
// its seeds again, which is what a Kafka 4.x client does by default. An application that wants that sets the
// hook; one that names no strategy, or none, gets kgo's own default (no hook). kgo has no trigger
// (metadata.recovery.rebootstrap.trigger.ms) and no way to turn its periodic seed request off.
func rebootstrapHook(run *lineproto.Run) func() ([]string, error) {
	if !run.Has("metadata.recovery.strategy") || run.Str("metadata.recovery.strategy", "") != "rebootstrap" {
		return nil
	}
	seeds := run.Brokers()
	return func() ([]string, error) {
		logf("REBOOTSTRAP_REQUIRED: back to the seeds %v", seeds)
		return seeds, nil
	}
}

// logLevels: FRANZGO_ADAPTER_LOG=error|warn|info|debug turns franz-go's own logging on.
var logLevels = map[string]kgo.LogLevel{"error": kgo.LogLevelError, "warn": kgo.LogLevelWarn,
	"info": kgo.LogLevelInfo, "debug": kgo.LogLevelDebug}

// saslMechanism: security.protocol SASL_PLAINTEXT with sasl.mechanism PLAIN or SCRAM-SHA-256/512,
// sasl.username and sasl.password -> kgo.SASL (nil without SASL).
func saslMechanism(run *lineproto.Run) sasl.Mechanism {
	if run.Str("security.protocol", "PLAINTEXT") != "SASL_PLAINTEXT" {
		return nil
	}
	user, pass := run.Str("sasl.username", ""), run.Str("sasl.password", "")
	switch run.Str("sasl.mechanism", "PLAIN") {
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	default:
		return plain.Auth{User: user, Pass: pass}.AsMechanism()
	}
}

// producerOpts: a producer client.
//
//	request.timeout.ms   -> kgo.ProduceRequestTimeout (Produce's timeout_ms, as Java's Sender sends)
//	delivery.timeout.ms  -> kgo.RecordDeliveryTimeout
//	acks                 -> kgo.RequiredAcks (idempotence off unless acks=all, as Kafka requires)
//	enable.idempotence   -> kgo.DisableIdempotentWrite when false
//	retries              -> kgo.RecordRetries
//	linger.ms            -> kgo.ProducerLinger (0 unless set, as the other adapters)
//	max.request.size     -> kgo.ProducerBatchMaxBytes and kgo.BrokerMaxWriteBytes
//	compression.type     -> kgo.ProducerBatchCompression
func producerOpts(run *lineproto.Run) []kgo.Opt {
	opts := commonOpts(run)
	acks := run.Str("acks", "all")
	idempotent := run.Bool("enable.idempotence", acks == "all" || acks == "-1")
	switch acks {
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !idempotent || (acks != "all" && acks != "-1") {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	opts = append(opts,
		kgo.ProduceRequestTimeout(requestTimeout(run)),
		kgo.ProducerLinger(run.Ms("linger.ms", 0)))
	if run.Has("delivery.timeout.ms") {
		opts = append(opts, kgo.RecordDeliveryTimeout(run.Ms("delivery.timeout.ms", 0)))
	}
	if run.Has("retries") {
		opts = append(opts, kgo.RecordRetries(run.Int("retries", 0)))
	}
	if run.Has("max.request.size") {
		size := int32(run.Int("max.request.size", 1<<20))
		opts = append(opts, kgo.ProducerBatchMaxBytes(size), kgo.BrokerMaxWriteBytes(size+1<<20))
	}
	if codec, ok := compression(run.Str("compression.type", "none")); ok {
		opts = append(opts, kgo.ProducerBatchCompression(codec))
	}
	return opts
}

func compression(name string) (kgo.CompressionCodec, bool) {
	switch strings.ToLower(name) {
	case "gzip":
		return kgo.GzipCompression(), true
	case "snappy":
		return kgo.SnappyCompression(), true
	case "lz4":
		return kgo.Lz4Compression(), true
	case "zstd":
		return kgo.ZstdCompression(), true
	}
	return kgo.NoCompression(), false
}

// consumerOpts: a consumer client (no group unless group is set).
//
//	fetch.max.wait.ms          -> kgo.FetchMaxWait (Kafka's 500 ms unless set; franz-go's own is 5 s)
//	fetch.max.bytes            -> kgo.FetchMaxBytes
//	max.partition.fetch.bytes  -> kgo.FetchMaxPartitionBytes
//	session.timeout.ms, heartbeat.interval.ms, max.poll.interval.ms -> kgo.SessionTimeout,
//	kgo.HeartbeatInterval, kgo.RebalanceTimeout
func consumerOpts(run *lineproto.Run) []kgo.Opt {
	opts := append(commonOpts(run), kgo.FetchMaxWait(max(run.Ms("fetch.max.wait.ms", 500*time.Millisecond), time.Millisecond)))
	if run.Has("fetch.max.bytes") {
		opts = append(opts, kgo.FetchMaxBytes(int32(run.Int("fetch.max.bytes", 0))), kgo.BrokerMaxReadBytes(int32(run.Int("fetch.max.bytes", 0))*2))
	}
	if run.Has("max.partition.fetch.bytes") {
		opts = append(opts, kgo.FetchMaxPartitionBytes(int32(run.Int("max.partition.fetch.bytes", 0))))
	}
	if run.Has("session.timeout.ms") {
		opts = append(opts, kgo.SessionTimeout(run.Ms("session.timeout.ms", 0)))
	}
	if run.Has("heartbeat.interval.ms") {
		opts = append(opts, kgo.HeartbeatInterval(run.Ms("heartbeat.interval.ms", 0)))
	}
	if run.Has("max.poll.interval.ms") {
		opts = append(opts, kgo.RebalanceTimeout(run.Ms("max.poll.interval.ms", 0)))
	}
	return opts
}
