package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"brokeremu/goadapters/internal/lineproto"
)

// silentMember is conformance.model.SILENT_MEMBER: the client id of join_group_held's first member,
// whose heartbeats the scenario black-holes.
const silentMember = "conformance-silent-member"

// joinGroupHeld: a first member (client id silentMember) joins the group and is left alone; a
// second member of the same group joins, timed until its session holds partitions. Each member is
// a sarama.ConsumerGroup on a client of its own (the classic protocol: JoinGroup, SyncGroup,
// consumer_group.go newSession), with the range strategy and no auto-commit.
//
// How a sarama application drives a group: Consume(ctx, topics, handler) is one generation; it
// returns when the session ends (a rebalance, a failed heartbeat) or when joining failed, and the
// application calls it again (ConsumerGroup's doc: "should be called inside an infinite loop"). A
// JoinGroup is read under Net.ReadTimeout like any request (broker.go readFull); a network error
// there ends the call at once (consumer_group.go joinSync returns it, no retry), so the second
// member calls Consume again until it holds partitions or the step's deadline passes, logging the
// errors, as an application would. The first member's Consume is called once: it stays in the
// group until its session ends and is not driven again (the other adapters stop polling it).
//
// When the first member holds its partitions is read from its own metrics: a SyncGroup answered
// without an error (sarama.go's documented counters consumer-group-sync-total-<group> and
// consumer-group-sync-failed-<group>; alone in the group, it is given every partition). Its
// Setup comes too late for that: sarama starts a session's heartbeat loop before it fetches the
// claims' offsets (consumer_group_session.go newConsumerGroupSession: heartbeatLoop, then
// manageClaims, then handler.Setup), so the black-holed first Heartbeat holds the OffsetFetch
// queued behind it on the coordinator connection, and Setup runs only after the session is lost.
// Both members' clients are made first (NewConsumerGroup loads the metadata): the second member's
// time is its Consume calls'.
func joinGroupHeld(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	group, topic := lineproto.ArgStr(step.Args, "group", "held"), lineproto.ArgStr(step.Args, "topic", "t")
	limit := 60 * time.Second
	if d, ok := step.Timeout(); ok {
		limit = d
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	first, err := newHeldMember(run, silentMember, group)
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("first member", first.group.Close)
	second, err := newHeldMember(run, run.ClientID, group)
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("second member", second.group.Close)

	first.consume(ctx, topic, false)
	if !first.waitAssigned(limit, func() bool { return first.synced(group) }) {
		return lineproto.Failed(step.Kind, 0, "TimeoutException", "the first member never got an assignment"+first.lastError())
	}
	start = time.Now()
	second.consume(ctx, topic, true)
	if !second.waitAssigned(limit, nil) {
		return lineproto.Failed(step.Kind, time.Since(start), "TimeoutException",
			"the second member never got an assignment"+second.lastError())
	}
	return lineproto.Ok(step.Kind, time.Since(start), nil)
}

// heldMember: one ConsumerGroup and what its sessions tell the step.
type heldMember struct {
	name     string
	group    sarama.ConsumerGroup
	metrics  interface{ Get(string) any } // its Config.MetricRegistry
	assigned chan struct{}                // closed by the first session that holds partitions
	lastErr  atomic.Pointer[error]        // what Consume last returned, if an error
}

func newHeldMember(run *lineproto.Run, clientID, group string) (*heldMember, error) {
	r := *run
	r.ClientID = clientID
	cfg := config(&r)
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Return.Errors = false // the group's own errors (a failed heartbeat) go to the log: nothing reads Errors()
	// sarama's own 2 s between join attempts after a retriable answer, scaled like its other timers
	cfg.Consumer.Group.Rebalance.Retry.Backoff = own(run, 2*time.Second)
	g, err := sarama.NewConsumerGroup(run.Brokers(), group, cfg)
	if err != nil {
		return nil, err
	}
	return &heldMember{name: clientID, group: g, metrics: cfg.MetricRegistry, assigned: make(chan struct{})}, nil
}

// counter is what a go-metrics counter in the member's Config.MetricRegistry offers.
type counter interface{ Count() int64 }

func (m *heldMember) count(name string) int64 {
	if c, ok := m.metrics.Get(name).(counter); ok {
		return c.Count()
	}
	return 0
}

// synced: a SyncGroup of the member was answered without an error (sarama counts each attempt,
// and each failed one, consumer_group.go joinSync).
func (m *heldMember) synced(group string) bool {
	return m.count("consumer-group-sync-total-"+group) > m.count("consumer-group-sync-failed-"+group)
}

// consume calls Consume in a goroutine: once, or (again) until ctx ends or a session held partitions.
func (m *heldMember) consume(ctx context.Context, topic string, again bool) {
	h := &heldHandler{assigned: m.assigned}
	go func() {
		for ctx.Err() == nil {
			err := m.group.Consume(ctx, []string{topic}, h)
			if err != nil {
				fmt.Fprintf(os.Stderr, "sarama-adapter: join_group_held: %s: Consume: %v\n", m.name, err)
				m.lastErr.Store(&err)
			}
			if !again || errors.Is(err, sarama.ErrClosedConsumerGroup) || h.held() {
				return
			}
			if err != nil {
				time.Sleep(10 * time.Millisecond) // no hot loop when the coordinator refuses at once
			}
		}
	}()
}

// waitAssigned: until a session of the member holds partitions, or asked (every 10 ms) says so.
func (m *heldMember) waitAssigned(limit time.Duration, asked func() bool) bool {
	deadline := time.After(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-m.assigned:
			return true
		case <-deadline:
			return false
		case <-tick.C:
			if asked != nil && asked() {
				return true
			}
		}
	}
}

// lastError: what Consume last returned, for the outcome's message ("" when nothing).
func (m *heldMember) lastError() string {
	if err := m.lastErr.Load(); err != nil {
		return " (Consume returned: " + (*err).Error() + ")"
	}
	return ""
}

// heldHandler: Setup reports a session that holds partitions; ConsumeClaim reads until the claim ends.
type heldHandler struct {
	assigned chan struct{}
}

func (h *heldHandler) held() bool {
	select {
	case <-h.assigned:
		return true
	default:
		return false
	}
}

func (h *heldHandler) Setup(sess sarama.ConsumerGroupSession) error {
	for _, parts := range sess.Claims() {
		if len(parts) > 0 && !h.held() {
			close(h.assigned)
			break
		}
	}
	return nil
}

func (h *heldHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *heldHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case _, ok := <-claim.Messages():
			if !ok {
				return nil
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}
