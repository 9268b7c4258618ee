package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"brokeremu/goadapters/internal/lineproto"
)

// The share scenarios' steps (conformance/scenarios_share.py), the stories the Java program tells
// with KafkaShareConsumer (ShareSteps.java) told with kgo's share consumer (pkg/kgo/consumer_share.go,
// franz-go v1.22.2). Each step first sets the group's own configs (IncrementalAlterConfigs on the
// GROUP resource), then tells its story with members of its own; the step's value is the dict the
// contracts read. Times in args are real ms, already scaled by the Python side (share_args).
//
// A story's calls and kgo's, one for one:
//
//	member (explicit acknowledgement)  kgo.NewClient(kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
//	                                   kgo.ShareAckCallback(...)): kgo's share consumer is always
//	                                   explicit-capable; a record left unacknowledged is accepted by the
//	                                   next poll (consumer_share.go finalizePreviousPoll), which the
//	                                   stories never rely on: they acknowledge every record they polled
//	poll(timeout)                      Client.PollFetches(ctx with the timeout)
//	acknowledge(record, type)          Record.Ack(kgo.AckAccept | AckRelease | AckReject | AckRenew)
//	commitSync(timeout)                Client.FlushAcks(ctx with the timeout): it sends what is pending
//	                                   and returns once every ack's ShareAckCallback ran, or at the
//	                                   context's end; the per-partition results are the callback's
//	close(timeout)                     Client.LeaveGroupContext(ctx with the timeout) (sends the pending
//	                                   acks in the final-epoch ShareAcknowledge, then the leave heartbeat),
//	                                   then Client.Close()
//	acquisitionLockTimeoutMs           Record.AcquisitionDeadline() less the time it was polled
//
// Two differences from KafkaShareConsumer that shape the stories:
//   - a renewed record must not be polled again before its terminal acknowledgement: kgo's next
//     poll accepts it (Record.Ack: "AckRenew does NOT defer the terminal ack across polls"), so the
//     renew story's holder renews and flushes without polling (KafkaShareConsumer hands the renewed
//     record back from its next poll instead); its renewals' "returned" are empty;
//   - kgo sends acknowledgements in the background too: piggybacked on the source's next ShareFetch,
//     or alone once a second has passed (consumer_share.go loopShareFetch's ack timer); FlushAcks only
//     hastens them.

var shareStories = map[string]func(*lineproto.Run, lineproto.Step) (map[string]any, error){
	"share_lock_expires":    shareLockExpires,
	"share_renew":           shareRenew,
	"share_ack_black_holed": shareAckBlackHoled,
	"share_delivery_limit":  shareDeliveryLimit,
	"share_close_pending":   shareClosePending,
}

const shareTick = 50 * time.Millisecond // each poll's timeout while a story waits, as ShareSteps.java's TICK

// shareStep: the group's configs, then the story; the value is the story's dict.
func shareStep(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	story := shareStories[step.Kind]
	return lineproto.Timed(step.Kind, func() (any, error) {
		if err := configureShareGroup(run, lineproto.ArgStr(step.Args, "group", "sg"), step.Args["group_config"]); err != nil {
			return nil, fmt.Errorf("setting the group's configs: %w", err)
		}
		return story(run, step)
	}, errorName)
}

// configureShareGroup: IncrementalAlterConfigs SET on the GROUP resource (kadm v1.19 has no call
// for group configs, so the request is kmsg's, sent through a kgo client as kadm would).
func configureShareGroup(run *lineproto.Run, group string, config any) error {
	entries, _ := config.(map[string]any)
	if len(entries) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(commonOpts(run)...)
	if err != nil {
		return err
	}
	defer closeSoon(cl)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = name
		c.Op = kmsg.IncrementalAlterConfigOpSet
		value := configText(entries[name])
		c.Value = &value
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("%s %s: %w", r.ResourceName, deref(r.ErrorMessage), err)
		}
	}
	return nil
}

// configText: a JSON number as Kafka's config text (30000, not 30000.0 or 3e+04).
func configText(v any) string {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprint(v)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// shareMember is one member of the group: a kgo share consumer of the step's topic, and the
// results its ShareAckCallback reported since its last commit.
type shareMember struct {
	cl      *kgo.Client
	name    string
	mu      sync.Mutex
	results kgo.ShareAckResults
	errs    []string // poll errors other than the poll's own deadline
}

func newShareMember(run *lineproto.Run, group, topic, name string) (*shareMember, error) {
	m := &shareMember{name: name}
	r := *run
	r.ClientID = run.ClientID + "-" + name
	opts := append(commonOpts(&r),
		// franz-go's own ShareFetch wait is 500 ms (FetchMaxWait's doc), Kafka's fetch.max.wait.ms too
		kgo.FetchMaxWait(max(run.Ms("fetch.max.wait.ms", 500*time.Millisecond), time.Millisecond)),
		kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			m.mu.Lock()
			m.results = append(m.results, rs...)
			m.mu.Unlock()
		}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	return m, nil
}

// poll: PollFetches bounded by d; the records it returned.
func (m *shareMember) poll(d time.Duration) []*kgo.Record {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	fetches := m.cl.PollFetches(ctx)
	fetches.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		if len(m.errs) < 20 {
			name, msg := errorName(err)
			m.errs = append(m.errs, fmt.Sprintf("%s-%d %s: %s", topic, p, name, msg))
		}
	})
	return fetches.Records()
}

func (m *shareMember) ack(rs []*kgo.Record, status kgo.AckStatus) {
	for _, r := range rs {
		r.Ack(status)
	}
}

// takeResults: what the ShareAckCallback reported since the last call, as ShareSteps.java reports
// commitSync: "" per partition when accepted, else the error's name (an error wins over a success
// of the same partition in another request).
func (m *shareMember) takeResults() map[string]any {
	m.mu.Lock()
	rs := m.results
	m.results = nil
	m.mu.Unlock()
	out := map[string]any{}
	for _, r := range rs {
		key := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		if r.Err != nil {
			name, _ := errorName(r.Err)
			out[key] = name
		} else if _, seen := out[key]; !seen {
			out[key] = ""
		}
	}
	return out
}

// commit: commitSync(timeout) as FlushAcks(ctx); key, key_ms and key_at_ms into out.
func (m *shareMember) commit(timeout time.Duration, start time.Time, out map[string]any, key string) {
	t := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	err := m.cl.FlushAcks(ctx)
	cancel()
	if err != nil {
		name, _ := errorName(err)
		out[key] = name
		m.takeResults() // what came back meanwhile belongs to no commit that returned
	} else {
		out[key] = m.takeResults()
	}
	out[key+"_ms"] = msSince(t)
	out[key+"_at_ms"] = msSince(start)
}

// close: close(timeout) as LeaveGroupContext(ctx), then Close(); "" or the leave's error.
func (m *shareMember) close(timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := m.cl.LeaveGroupContext(ctx)
	closeSoon(m.cl)
	if err != nil {
		name, _ := errorName(err)
		return name
	}
	return ""
}

func msSince(t time.Time) float64 {
	return lineproto.Ms(time.Since(t))
}

func shareRecord(r *kgo.Record, member string, atMs float64) map[string]any {
	return map[string]any{"member": member, "offset": r.Offset, "partition": r.Partition, "at_ms": atMs,
		"delivery_count": r.DeliveryCount(), "value": r.Value}
}

// held: the member that received records first, what it received and when.
type held struct {
	m       *shareMember
	raw     []*kgo.Record
	at      time.Time
	records []any
}

// firstToReceive: a and b poll in turn until one receives records (held unacknowledged).
func firstToReceive(a, b *shareMember, start time.Time, maxWait time.Duration) *held {
	for time.Since(start) < maxWait {
		for _, m := range []*shareMember{a, b} {
			if got := m.poll(shareTick); len(got) > 0 {
				h := &held{m: m, raw: got, at: time.Now()}
				for _, r := range got {
					h.records = append(h.records, shareRecord(r, m.name, msSince(start)))
				}
				return h
			}
		}
	}
	return nil
}

func argDuration(args map[string]any, key string, otherwiseMs float64) time.Duration {
	return time.Duration(lineproto.ArgFloat(args, key, otherwiseMs) * float64(time.Millisecond))
}

// twoMembers: two members subscribe; the first to receive the record holds it; body tells the rest.
// Both close at the end, bounded by closeWait.
func twoMembers(run *lineproto.Run, step lineproto.Step, closeWait time.Duration,
	body func(a, b *shareMember, start time.Time, h *held, out map[string]any)) (map[string]any, error) {
	group, topic := lineproto.ArgStr(step.Args, "group", "sg"), lineproto.ArgStr(step.Args, "topic", "t")
	maxWait := argDuration(step.Args, "max_ms", 30_000)
	a, err := newShareMember(run, group, topic, "a")
	if err != nil {
		return nil, err
	}
	b, err := newShareMember(run, group, topic, "b")
	if err != nil {
		closeSoon(a.cl)
		return nil, err
	}
	out := map[string]any{}
	defer func() {
		a.close(closeWait)
		b.close(closeWait)
		if errs := append(a.errs, b.errs...); len(errs) > 0 {
			out["poll_errors"] = strings.Join(errs, "; ")
		}
	}()
	start := time.Now()
	h := firstToReceive(a, b, start, maxWait)
	if h == nil {
		out["error"] = "no member received a record within max_ms"
		return out, nil
	}
	out["first"] = h.records
	body(a, b, start, h, out)
	return out, nil
}

func other(a, b *shareMember, h *held) *shareMember {
	if h.m == a {
		return b
	}
	return a
}

// shareLockExpires: the holder "processes" for process_ms without polling, longer than its lock;
// the other polls on and receives the record again at the lock's expiry. The holder's accept
// afterwards comes too late.
func shareLockExpires(run *lineproto.Run, step lineproto.Step) (map[string]any, error) {
	maxWait, process := argDuration(step.Args, "max_ms", 30_000), argDuration(step.Args, "process_ms", 0)
	return twoMembers(run, step, maxWait, func(a, b *shareMember, start time.Time, h *held, out map[string]any) {
		out["lock_ms"] = lockMs(h)
		o := other(a, b, h)
		until := h.at.Add(process)
		again := []any{}
		for len(again) == 0 && time.Now().Before(until) {
			got := o.poll(shareTick)
			for _, r := range got {
				again = append(again, shareRecord(r, o.name, msSince(start)))
			}
			o.ack(got, kgo.AckAccept)
		}
		out["second"] = again
		if len(again) > 0 {
			o.commit(maxWait, start, out, "second_commit")
		}
		time.Sleep(time.Until(until))
		h.m.ack(h.raw, kgo.AckAccept)
		h.m.commit(maxWait, start, out, "first_commit")
	})
}

// lockMs: the acquisition lock as kgo reports it (Record.AcquisitionDeadline), from when it was polled.
func lockMs(h *held) float64 {
	deadline := h.raw[0].AcquisitionDeadline()
	if deadline.IsZero() {
		return -1
	}
	return lineproto.Ms(deadline.Sub(h.at))
}

// shareRenew: as shareLockExpires, but every renew_ms the holder acknowledges RENEW and flushes;
// the other member, polling throughout, should receive nothing. Then the holder accepts. The
// holder does not poll while it renews: kgo's next poll would accept the renewed record.
func shareRenew(run *lineproto.Run, step lineproto.Step) (map[string]any, error) {
	maxWait, process := argDuration(step.Args, "max_ms", 30_000), argDuration(step.Args, "process_ms", 0)
	every := argDuration(step.Args, "renew_ms", 10_000)
	return twoMembers(run, step, maxWait, func(a, b *shareMember, start time.Time, h *held, out map[string]any) {
		o := other(a, b, h)
		until, next := h.at.Add(process), h.at.Add(every)
		stolen, renewals := []any{}, []any{}
		for time.Now().Before(until) {
			got := o.poll(shareTick)
			for _, r := range got {
				stolen = append(stolen, shareRecord(r, o.name, msSince(start)))
			}
			o.ack(got, kgo.AckRelease)
			if now := time.Now(); !now.Before(next) && now.Before(until) {
				h.m.ack(h.raw, kgo.AckRenew)
				one := map[string]any{"returned": []any{}}
				h.m.commit(maxWait, start, one, "commit")
				renewals = append(renewals, one)
				next = next.Add(every)
			}
		}
		out["second"], out["renewals"] = stolen, renewals
		h.m.ack(h.raw, kgo.AckAccept)
		h.m.commit(maxWait, start, out, "first_commit")
	})
}

// shareAckBlackHoled: the holder accepts and commits with commitSync(timeout) while ShareAcknowledge
// is black-holed; the other member then receives the record again. Closes bounded by close_ms.
func shareAckBlackHoled(run *lineproto.Run, step lineproto.Step) (map[string]any, error) {
	maxWait := argDuration(step.Args, "max_ms", 30_000)
	commitWait := stepLimit(step, maxWait)
	return twoMembers(run, step, argDuration(step.Args, "close_ms", 1000),
		func(a, b *shareMember, start time.Time, h *held, out map[string]any) {
			h.m.ack(h.raw, kgo.AckAccept)
			h.m.commit(commitWait, start, out, "first_commit")
			o := other(a, b, h)
			again := []any{}
			end := time.Now().Add(maxWait)
			for len(again) == 0 && time.Now().Before(end) {
				for _, r := range o.poll(shareTick) {
					again = append(again, shareRecord(r, o.name, msSince(start)))
				}
			}
			out["second"] = again
		})
}

// shareDeliveryLimit: one member releases every record whose value starts "poison" and accepts the
// others, polling until watch_ms passed without a delivery (the first awaited up to max_ms).
func shareDeliveryLimit(run *lineproto.Run, step lineproto.Step) (map[string]any, error) {
	maxWait, watch := argDuration(step.Args, "max_ms", 30_000), argDuration(step.Args, "watch_ms", 0)
	c, err := newShareMember(run, lineproto.ArgStr(step.Args, "group", "sg"), lineproto.ArgStr(step.Args, "topic", "t"), "a")
	if err != nil {
		return nil, err
	}
	deliveries, commits := []any{}, []any{}
	out := map[string]any{}
	defer func() {
		c.close(maxWait)
		out["deliveries"], out["commits"] = deliveries, commits
		if len(c.errs) > 0 {
			out["poll_errors"] = strings.Join(c.errs, "; ")
		}
	}()
	start := time.Now()
	end := start.Add(maxWait)
	var last time.Time
	for time.Now().Before(end) {
		if !last.IsZero() && last.Add(watch).Before(end) {
			end = last.Add(watch)
		}
		got := c.poll(shareTick)
		for _, r := range got {
			deliveries = append(deliveries, shareRecord(r, "a", msSince(start)))
			last = time.Now()
			if strings.HasPrefix(string(r.Value), "poison") {
				r.Ack(kgo.AckRelease)
			} else {
				r.Ack(kgo.AckAccept)
			}
		}
		if len(got) > 0 {
			one := map[string]any{}
			c.commit(maxWait, start, one, "commit")
			commits = append(commits, one)
		}
	}
	return out, nil
}

// shareClosePending: one member receives the record, accepts it without committing, and closes
// with close(timeout): LeaveGroupContext sends the pending acknowledgement (the final-epoch
// ShareAcknowledge) and returns when it is answered or at its deadline.
func shareClosePending(run *lineproto.Run, step lineproto.Step) (map[string]any, error) {
	maxWait := argDuration(step.Args, "max_ms", 30_000)
	c, err := newShareMember(run, lineproto.ArgStr(step.Args, "group", "sg"), lineproto.ArgStr(step.Args, "topic", "t"), "a")
	if err != nil {
		return nil, err
	}
	first := []any{}
	out := map[string]any{}
	closed := false
	defer func() {
		if !closed {
			c.close(maxWait)
		}
		out["first"] = first
		if len(c.errs) > 0 {
			out["poll_errors"] = strings.Join(c.errs, "; ")
		}
	}()
	start := time.Now()
	for len(first) == 0 && time.Since(start) < maxWait {
		got := c.poll(shareTick)
		for _, r := range got {
			first = append(first, shareRecord(r, "a", msSince(start)))
		}
		c.ack(got, kgo.AckAccept)
	}
	t := time.Now()
	out["close_at_ms"] = msSince(start)
	out["close"] = c.close(stepLimit(step, maxWait))
	closed = true
	out["close_ms"] = msSince(t)
	out["close_report"] = c.takeResults()
	return out, nil
}
