package main

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"brokeremu/goadapters/internal/lineproto"
)

// joinGroupHeld (scenario server.joingroup-held), as the adapters of our client, confluent-kafka,
// kafka-python, aiokafka and kafkajs run it: a first member (client id silentMember, whose
// heartbeats the scenario black-holes) joins the group and, once assigned, is polled no more but
// stays open; then a second member joins. Timed: from the second member's start until it owns
// partitions (polled a tick at a time). Both are classic-protocol group consumers (no
// kgo.ServerSideBalancer: JoinGroup/SyncGroup), whose JoinGroup franz-go reads for
// RequestTimeoutOverhead + RebalanceTimeout (pkg/kgo/client.go, the JoinGroupRequest case of the
// request's read timeout), max.poll.interval.ms being the RebalanceTimeout (consumerOpts).
func joinGroupHeld(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	group, topic := lineproto.ArgStr(step.Args, "group", "held"), lineproto.ArgStr(step.Args, "topic", "t")
	limit := stepLimit(step, 60*time.Second)
	first, err := newClassicMember(run, silentMember, group, topic)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer first.close()
	assigned := func(m *groupMember) func() bool { return func() bool { return len(m.assignment()) > 0 } }
	if !until(assigned(first), limit, first) {
		return lineproto.Failed(step.Kind, 0, "TimeoutException", "the first member never got an assignment")
	}
	start := time.Now()
	second, err := newClassicMember(run, run.ClientID, group, topic)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer second.close()
	if !until(assigned(second), limit, second) {
		return lineproto.Failed(step.Kind, time.Since(start), "TimeoutException", "the second member never got an assignment")
	}
	return lineproto.Ok(step.Kind, time.Since(start), nil)
}

// newClassicMember: a group member on the classic protocol (JoinGroup/SyncGroup/Heartbeat).
func newClassicMember(run *lineproto.Run, clientID, group, topic string) (*groupMember, error) {
	m := &groupMember{topic: topic, stop: make(chan struct{})}
	cl, err := kgo.NewClient(m.opts(run, clientID, group)...)
	m.cl = cl
	return m, err
}
