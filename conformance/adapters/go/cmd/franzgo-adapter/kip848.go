package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"brokeremu/goadapters/internal/lineproto"
)

// KIP-848 steps (conformance/scenarios_kip848.py), as the Java program's Kip848.java runs them.
//
// franz-go v1.22 does not use KIP-848 by itself: a group consumer opts in with
// kgo.ServerSideBalancer() (config.go: "ServerSideBalancer opts into KIP-848 'next-gen' consumer
// groups ... requires Kafka 4.0+ and either RangeBalancer or StickyBalancer as your balancer;
// otherwise, the client uses the classic client-driven protocol"), and consumer_group_848.go
// should848 takes the new protocol only when the broker serves ConsumerGroupHeartbeat v1
// (Client.supportsKIP848v1). Every member here opts in; the server-side assignor is kgo's choice
// from the balancer (sticky -> "uniform", range -> "range": manage848), so group.remote.assignor
// range runs kgo.RangeBalancer, anything else franz-go's default CooperativeStickyBalancer.
//
// A member is a group consumer of one topic with auto-commit off and the start as reset offset
// (as Java's Run.consumer); max.poll.interval.ms -> kgo.RebalanceTimeout, which franz-go sends as
// ConsumerGroupHeartbeat's RebalanceTimeoutMillis (manage848's heartbeat request). franz-go has no
// client-side poll timer: its heartbeats run in the background whether or not the application
// polls. What a member owns is tracked by its OnPartitionsAssigned / Revoked / Lost callbacks.
// Times in args (run_ms, stall_ms, revoke_ms, every_ms) are already scaled, in ms; the members
// poll every 20 ms (Kip848.java's TICK).

// silentMember is conformance.model.SILENT_MEMBER: the client id of a step's other member.
const silentMember = "conformance-silent-member"

const tick = 20 * time.Millisecond

type groupMember struct {
	cl       *kgo.Client
	topic    string
	mu       sync.Mutex
	owned    []int32
	most     int
	slow     time.Duration // OnPartitionsRevoked takes this long (unless stop closes)
	stop     chan struct{}
	stopOnce sync.Once
}

func newGroupMember(run *lineproto.Run, clientID, group, topic string, slow time.Duration) (*groupMember, error) {
	m := &groupMember{topic: topic, slow: slow, stop: make(chan struct{})}
	opts := append(m.opts(run, clientID, group), kgo.ServerSideBalancer())
	if run.Str("group.remote.assignor", "uniform") == "range" {
		opts = append(opts, kgo.Balancers(kgo.RangeBalancer()))
	}
	cl, err := kgo.NewClient(opts...)
	m.cl = cl
	return m, err
}

// opts: a group consumer of m's topic with auto-commit off, the start as reset offset, and m
// tracking what it owns through the partition callbacks (the classic protocol unless the caller
// adds kgo.ServerSideBalancer()).
func (m *groupMember) opts(run *lineproto.Run, clientID, group string) []kgo.Opt {
	topic := m.topic
	r := *run
	r.ClientID = clientID
	return append(consumerOpts(&r), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { m.change(a[topic], nil) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			if len(r[topic]) > 0 && m.slow > 0 {
				select {
				case <-time.After(m.slow):
				case <-m.stop:
				}
			}
			m.change(nil, r[topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) { m.change(nil, l[topic]) }))
}

func (m *groupMember) change(added, removed []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := slices.DeleteFunc(slices.Clone(m.owned), func(p int32) bool { return slices.Contains(removed, p) })
	for _, p := range added {
		if !slices.Contains(now, p) {
			now = append(now, p)
		}
	}
	slices.Sort(now)
	m.owned = now
	m.most = max(m.most, len(now))
}

func (m *groupMember) assignment() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.owned)
}

func (m *groupMember) poll(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	m.cl.PollFetches(ctx)
	cancel()
}

// close: the member leaves (Client.Close leaves the group); a slow revocation in progress is cut short.
func (m *groupMember) close() {
	m.stopOnce.Do(func() { close(m.stop) })
	closeSoon(m.cl)
}

// until polls the members, a tick each, until done or limit.
func until(done func() bool, limit time.Duration, members ...*groupMember) bool {
	end := time.Now().Add(limit)
	for !done() && time.Now().Before(end) {
		for _, m := range members {
			m.poll(tick)
		}
	}
	return done()
}

func stepLimit(step lineproto.Step, otherwise time.Duration) time.Duration {
	if d, ok := step.Timeout(); ok {
		return d
	}
	return otherwise
}

func argMs(args map[string]any, key string, otherwise float64) time.Duration {
	return time.Duration(lineproto.ArgFloat(args, key, otherwise) * float64(time.Millisecond))
}

func fail848(kind string, start time.Time, msg string) lineproto.Outcome {
	return lineproto.Failed(kind, time.Since(start), "TimeoutException", msg)
}

// kip848Heartbeats: join, then poll for run_ms; the heartbeats' spacing is read from the trace.
func kip848Heartbeats(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	m, err := newGroupMember(run, run.ClientID, lineproto.ArgStr(step.Args, "group", "k848-hb"), lineproto.ArgStr(step.Args, "topic", "t"), 0)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer m.close()
	if !until(func() bool { return len(m.assignment()) > 0 }, stepLimit(step, 30*time.Second), m) {
		return fail848(step.Kind, start, "never assigned")
	}
	end := time.Now().Add(argMs(step.Args, "run_ms", 1000))
	for time.Now().Before(end) {
		m.poll(tick)
	}
	return lineproto.Ok(step.Kind, time.Since(start), nil)
}

// kip848LatePoll: join, stop polling for stall_ms, poll again. Timed: from the next poll until the
// member owns partitions again.
func kip848LatePoll(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	start := time.Now()
	limit := stepLimit(step, 30*time.Second)
	m, err := newGroupMember(run, run.ClientID, lineproto.ArgStr(step.Args, "group", "k848-late"), lineproto.ArgStr(step.Args, "topic", "t"), 0)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer m.close()
	assigned := func() bool { return len(m.assignment()) > 0 }
	until(assigned, limit, m)
	time.Sleep(argMs(step.Args, "stall_ms", 3000)) // the application is busy
	start = time.Now()
	if !until(assigned, limit, m) {
		return fail848(step.Kind, start, "never assigned again")
	}
	return lineproto.Ok(step.Kind, time.Since(start), nil)
}

// memberProcess is the first member of kip848_member_crash, in a process of its own (this program
// run as `franzgo-adapter member <request JSON>`), so that killing it is a crash: no leave, no
// close. It prints its assignment's size whenever it changes, and polls until killed.
func memberProcess(request string) {
	var req struct {
		Run   lineproto.Run `json:"run"`
		Group string        `json:"group"`
		Topic string        `json:"topic"`
	}
	if err := json.Unmarshal([]byte(request), &req); err != nil {
		fmt.Fprintln(os.Stderr, "franzgo-adapter member: bad request:", err)
		os.Exit(2)
	}
	// the parent holds this process's stdin open: if the parent dies (killed as a hung adapter
	// program, say), stdin ends and the member goes too instead of polling forever
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	m, err := newGroupMember(&req.Run, req.Run.ClientID, req.Group, req.Topic, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "franzgo-adapter member:", err)
		os.Exit(1)
	}
	last := -1
	for {
		m.poll(tick)
		if now := len(m.assignment()); now != last {
			fmt.Println(now)
			last = now
		}
	}
}

// kip848MemberCrash: a first member (its own process, client id silentMember) owns the topic, the
// measured member joins and they split it; then the first is killed. Timed: from the kill until the
// measured member owns every partition. Value: {"partitions", "takeover_ms"}.
func kip848MemberCrash(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	group, topic := lineproto.ArgStr(step.Args, "group", "k848"), lineproto.ArgStr(step.Args, "topic", "t")
	limit := stepLimit(step, 60*time.Second)
	start := time.Now()
	self, err := os.Executable()
	if err != nil {
		return lineproto.Failed(step.Kind, 0, "AdapterError", "os.Executable: "+err.Error())
	}
	firstRun := *run
	firstRun.ClientID = silentMember
	request, _ := json.Marshal(map[string]any{"run": firstRun, "group": group, "topic": topic})
	first := exec.Command(self, "member", string(request))
	first.Stderr = os.Stderr
	out, err := first.StdoutPipe()
	var stdin io.WriteCloser
	if err == nil {
		stdin, err = first.StdinPipe() // closed when this process ends: the member exits (memberProcess)
	}
	if err == nil {
		err = first.Start()
	}
	if err != nil {
		return lineproto.Failed(step.Kind, 0, "AdapterError", "starting the first member: "+err.Error())
	}
	defer func() { _ = first.Process.Kill(); _ = stdin.Close(); _ = first.Wait() }()
	sizes := make(chan int, 64)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if n, err := strconv.Atoi(lines.Text()); err == nil {
				sizes <- n
			}
		}
		close(sizes)
	}()
	total := 0
	for deadline := time.After(limit); total == 0; {
		select {
		case n, ok := <-sizes:
			if !ok {
				return fail848(step.Kind, start, "the first member exited before it joined")
			}
			total = n
		case <-deadline:
			return fail848(step.Kind, start, "the first member never joined")
		}
	}
	measured, err := newGroupMember(run, run.ClientID, group, topic, 0)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer measured.close()
	if !until(func() bool { n := len(measured.assignment()); return n > 0 && n < total }, limit, measured) {
		return fail848(step.Kind, start, "the group never split")
	}
	_ = first.Process.Kill()
	start = time.Now()
	ok := until(func() bool { return len(measured.assignment()) == total }, limit, measured)
	elapsed := time.Since(start)
	if !ok {
		return lineproto.Failed(step.Kind, elapsed, "TimeoutException", "the crashed member's partitions never moved")
	}
	return lineproto.Ok(step.Kind, elapsed, map[string]any{"partitions": total,
		"takeover_ms": float64(elapsed.Microseconds()/100) / 10})
}

// kip848SlowRevoke: a first member (client id silentMember, polled on its own goroutine) whose
// OnPartitionsRevoked takes revoke_ms owns the topic; the measured member joins. Timed: from its
// join until it owns every partition, which happens when the broker fences the slow member at its
// rebalance timeout.
func kip848SlowRevoke(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	group, topic := lineproto.ArgStr(step.Args, "group", "k848-slow"), lineproto.ArgStr(step.Args, "topic", "t")
	limit := stepLimit(step, 60*time.Second)
	start := time.Now()
	slow, err := newGroupMember(run, silentMember, group, topic, argMs(step.Args, "revoke_ms", 4000))
	if err != nil {
		return notCreated(step.Kind, err)
	}
	polling := make(chan struct{})
	go func() {
		defer close(polling)
		for {
			select {
			case <-slow.stop:
				return
			default:
				slow.poll(tick)
			}
		}
	}()
	defer func() { slow.close(); <-polling }()
	end := time.Now().Add(limit)
	for slow.mostOwned() == 0 && time.Now().Before(end) {
		time.Sleep(tick)
	}
	total := slow.mostOwned()
	if total == 0 {
		return fail848(step.Kind, start, "the first member never joined")
	}
	measured, err := newGroupMember(run, run.ClientID, group, topic, 0)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer measured.close()
	start = time.Now()
	if !until(func() bool { return len(measured.assignment()) == total }, limit, measured) {
		return fail848(step.Kind, start, "the slow member's partitions never moved")
	}
	return lineproto.Ok(step.Kind, time.Since(start), nil)
}

func (m *groupMember) mostOwned() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.most
}

// kip848StaleCommit: a member commits offset 0 of what it owns (Client.CommitOffsetsSync) every
// every_ms for run_ms while a second one (client id silentMember) joins; the scenario delays every
// heartbeat answer. The first refused commit is the outcome; value: {"commits_before"}.
func kip848StaleCommit(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	group, topic := lineproto.ArgStr(step.Args, "group", "k848-stale"), lineproto.ArgStr(step.Args, "topic", "t")
	limit := stepLimit(step, 60*time.Second)
	every := argMs(step.Args, "every_ms", 500)
	runFor := min(limit, argMs(step.Args, "run_ms", 1000))
	start := time.Now()
	a, err := newGroupMember(run, run.ClientID, group, topic, 0)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer a.close()
	until(func() bool { return len(a.assignment()) > 0 }, limit, a)
	// the second member joins as its client is built (a kgo group consumer joins in the background)
	b, err := newGroupMember(run, silentMember, group, topic, 0)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer b.close()
	start = time.Now()
	commits := 0
	for time.Since(start) < runFor {
		end := time.Now().Add(every)
		for time.Now().Before(end) {
			a.poll(tick)
			b.poll(time.Millisecond)
		}
		owned := a.assignment()
		if len(owned) == 0 {
			continue
		}
		offsets := map[string]map[int32]kgo.EpochOffset{topic: {}}
		for _, p := range owned {
			offsets[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: 0}
		}
		if err := memberCommit(a.cl, offsets); err != nil {
			name, msg := errorName(err)
			o := lineproto.Failed(step.Kind, time.Since(start), name, msg)
			o.Value = map[string]any{"commits_before": commits}
			return o
		}
		commits++
	}
	return lineproto.Ok(step.Kind, time.Since(start), map[string]any{"commits_before": commits})
}

// memberCommit: Client.CommitOffsetsSync, its error or the first partition's refusal.
func memberCommit(cl *kgo.Client, offsets map[string]map[int32]kgo.EpochOffset) error {
	ctx, cancel := context.WithTimeout(context.Background(), txnSetup)
	defer cancel()
	var out error
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			out = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil && out == nil {
					out = fmt.Errorf("partition %s-%d: %w", t.Topic, p.Partition, e)
				}
			}
		}
	})
	return out
}

// kip848CoordinatorDies: two members; the scenario stops the group coordinator's broker when the
// first (client id silentMember) is asked to revoke for the second. Timed: from the second's join
// until the two hold the topic between them.
func kip848CoordinatorDies(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	group, topic := lineproto.ArgStr(step.Args, "group", "k848-move"), lineproto.ArgStr(step.Args, "topic", "t")
	limit := stepLimit(step, 60*time.Second)
	start := time.Now()
	first, err := newGroupMember(run, silentMember, group, topic, 0)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer first.close()
	if !until(func() bool { return len(first.assignment()) > 0 }, limit, first) {
		return fail848(step.Kind, start, "the first member never joined")
	}
	total := len(first.assignment())
	second, err := newGroupMember(run, run.ClientID, group, topic, 0)
	if err != nil {
		return notCreated(step.Kind, err)
	}
	defer second.close()
	start = time.Now()
	settled := func() bool {
		mine, theirs := len(first.assignment()), len(second.assignment())
		return mine+theirs == total && mine > 0 && theirs > 0
	}
	if !until(settled, limit, first, second) {
		return fail848(step.Kind, start, "the group never settled on the new coordinator")
	}
	return lineproto.Ok(step.Kind, time.Since(start), nil)
}
