// Package lineproto is the conformance suite's line protocol (version 1, documented in
// conformance/adapters/line_protocol.py) for the Go client programs: one JSON request a line on
// stdin, one JSON answer a line on stdout. Each program supplies a Client; this package reads
// the requests, decodes {"$bytes": base64} arguments, times nothing itself and writes answers.
package lineproto

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Step is one operation of a run: its kind, its arguments and its deadline (nil: the client's default).
type Step struct {
	Kind      string         `json:"kind"`
	Args      map[string]any `json:"args"`
	TimeoutMs *int64         `json:"timeout_ms"`
}

// Timeout is the step's deadline as a Duration, and whether it has one.
func (s Step) Timeout() (time.Duration, bool) {
	if s.TimeoutMs == nil {
		return 0, false
	}
	return time.Duration(*s.TimeoutMs) * time.Millisecond, true
}

// Run is one "run" request: where the brokers are and the scenario's config (Kafka's dotted
// names, already scaled by the caller).
type Run struct {
	Bootstrap string         `json:"bootstrap"`
	ClientID  string         `json:"client_id"`
	Config    map[string]any `json:"config"`
	Steps     []Step         `json:"steps"`
}

// Brokers is the bootstrap list split on commas.
func (r *Run) Brokers() []string {
	var out []string
	for _, b := range strings.Split(r.Bootstrap, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// Has says whether the config sets key.
func (r *Run) Has(key string) bool {
	v, ok := r.Config[key]
	return ok && v != nil
}

// Ms reads a config value in milliseconds as a Duration, or otherwise when it is not set.
func (r *Run) Ms(key string, otherwise time.Duration) time.Duration {
	if !r.Has(key) {
		return otherwise
	}
	return time.Duration(Float(r.Config[key], 0) * float64(time.Millisecond))
}

// Int reads an integer config value.
func (r *Run) Int(key string, otherwise int) int {
	if !r.Has(key) {
		return otherwise
	}
	return int(Float(r.Config[key], float64(otherwise)))
}

// Str reads a config value as text ("all", "1", true -> "true").
func (r *Run) Str(key, otherwise string) string {
	if !r.Has(key) {
		return otherwise
	}
	return fmt.Sprint(r.Config[key])
}

// Bool reads a boolean config value (true, "true").
func (r *Run) Bool(key string, otherwise bool) bool {
	if !r.Has(key) {
		return otherwise
	}
	switch v := r.Config[key].(type) {
	case bool:
		return v
	default:
		b, err := strconv.ParseBool(fmt.Sprint(v))
		if err != nil {
			return otherwise
		}
		return b
	}
}

// Float reads a JSON number (or a numeric string).
func Float(v any, otherwise float64) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case string:
		f, err := strconv.ParseFloat(n, 64)
		if err == nil {
			return f
		}
	}
	return otherwise
}

// Outcome is one step's answer.
type Outcome struct {
	Operation    string  `json:"operation"`
	OK           bool    `json:"ok"`
	ElapsedMs    float64 `json:"elapsed_ms"`
	ErrorType    *string `json:"error_type"`
	ErrorMessage *string `json:"error_message"`
	Value        any     `json:"value"`
}

// Ok is a successful outcome.
func Ok(kind string, elapsed time.Duration, value any) Outcome {
	return Outcome{Operation: kind, OK: true, ElapsedMs: Ms(elapsed), Value: value}
}

// Failed is a failed outcome: errorType names the error (Kafka's Java name where it is the
// same error), message keeps the client's own words.
func Failed(kind string, elapsed time.Duration, errorType, message string) Outcome {
	return Outcome{Operation: kind, OK: false, ElapsedMs: Ms(elapsed), ErrorType: &errorType, ErrorMessage: &message}
}

// Ms is a Duration in (fractional) milliseconds.
func Ms(d time.Duration) float64 {
	return float64(d.Nanoseconds()) / 1e6
}

// Timed calls fn, timed around the call, and turns an error into a failed outcome named by name.
func Timed(kind string, fn func() (any, error), name func(error) (string, string)) Outcome {
	start := time.Now()
	value, err := fn()
	elapsed := time.Since(start)
	if err != nil {
		t, m := name(err)
		return Failed(kind, elapsed, t, m)
	}
	return Ok(kind, elapsed, value)
}

// Client is one client library behind the protocol.
type Client interface {
	// Hello describes the client: name, version, operations, the settings it maps.
	Hello() map[string]any
	// Perform runs one step and reports its outcome (never panics on a client error).
	Perform(run *Run, step Step) Outcome
}

// Commander is a Client with commands beyond "run": the chaos driver's ("chaos_*", documented
// in conformance/adapters/java/src/main/java/brokeremu/adapter/Chaos.java), which hold one
// producer or consumer across calls. req is the whole request, {"$bytes"} decoded.
type Commander interface {
	Command(cmd string, req map[string]any) map[string]any
}

// Serve answers requests from in on out until "quit" or EOF.
func Serve(c Client, in io.Reader, out io.Writer) {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	w := bufio.NewWriter(out)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" {
			continue
		}
		var head struct {
			Cmd string `json:"cmd"`
		}
		if err := json.Unmarshal([]byte(line), &head); err != nil {
			write(w, map[string]any{"fatal": "not JSON: " + err.Error()})
			continue
		}
		switch head.Cmd {
		case "quit":
			return
		case "hello":
			write(w, c.Hello())
		case "run":
			write(w, answerRun(c, line))
		default:
			if cmdr, ok := c.(Commander); ok && strings.HasPrefix(head.Cmd, "chaos_") {
				write(w, command(cmdr, head.Cmd, line))
				continue
			}
			write(w, map[string]any{"fatal": "unknown cmd " + head.Cmd})
		}
	}
}

func answerRun(c Client, line string) map[string]any {
	var run Run
	if err := json.Unmarshal([]byte(line), &run); err != nil {
		return map[string]any{"fatal": "bad run request: " + err.Error()}
	}
	if run.Config == nil {
		run.Config = map[string]any{}
	}
	outcomes := make([]Outcome, 0, len(run.Steps))
	for _, step := range run.Steps {
		if step.Args == nil {
			step.Args = map[string]any{}
		}
		step.Args = DecodeBytes(step.Args).(map[string]any)
		outcomes = append(outcomes, perform(c, &run, step))
	}
	return map[string]any{"outcomes": outcomes}
}

// command answers a Commander's request; a panic is a fatal answer, not a dead program.
func command(c Commander, cmd, line string) (answer map[string]any) {
	defer func() {
		if r := recover(); r != nil {
			answer = map[string]any{"fatal": fmt.Sprintf("%s panicked: %v", cmd, r)}
		}
	}()
	var req map[string]any
	if err := json.Unmarshal([]byte(line), &req); err != nil {
		return map[string]any{"fatal": "bad request: " + err.Error()}
	}
	return c.Command(cmd, DecodeBytes(req).(map[string]any))
}

// RunOf reads the bootstrap, client id and config of a request outside "run".
func RunOf(req map[string]any) *Run {
	run := &Run{Bootstrap: fmt.Sprint(req["bootstrap"]), ClientID: fmt.Sprint(req["client_id"])}
	if cfg, ok := req["config"].(map[string]any); ok {
		run.Config = cfg
	} else {
		run.Config = map[string]any{}
	}
	return run
}

// perform runs a step; an adapter bug (a panic) is still an outcome, named as such.
func perform(c Client, run *Run, step Step) (o Outcome) {
	defer func() {
		if r := recover(); r != nil {
			o = Failed(step.Kind, 0, "AdapterPanic", fmt.Sprint(r))
		}
	}()
	return c.Perform(run, step)
}

func write(w *bufio.Writer, v any) {
	b, err := json.Marshal(EncodeBytes(v))
	if err != nil {
		b, _ = json.Marshal(map[string]any{"fatal": "answer not encodable: " + err.Error()})
	}
	_, _ = w.Write(append(b, '\n'))
	_ = w.Flush()
}

// DecodeBytes turns {"$bytes": base64} objects into []byte, recursively.
func DecodeBytes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			if s, ok := x["$bytes"].(string); ok {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					return b
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = DecodeBytes(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = DecodeBytes(e)
		}
		return out
	}
	return v
}

// EncodeBytes turns []byte into {"$bytes": base64}, recursively through maps and slices
// (Outcome values are plain maps and slices).
func EncodeBytes(v any) any {
	switch x := v.(type) {
	case []byte:
		return map[string]any{"$bytes": base64.StdEncoding.EncodeToString(x)}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = EncodeBytes(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = EncodeBytes(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = EncodeBytes(e)
		}
		return out
	case map[string]map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = EncodeBytes(e)
		}
		return out
	case []Outcome:
		out := make([]any, len(x))
		for i, o := range x {
			o.Value = EncodeBytes(o.Value)
			out[i] = o
		}
		return out
	}
	return v
}

// Main serves the protocol on stdin/stdout; the client libraries' own logging goes to stderr.
func Main(c Client) {
	Serve(c, os.Stdin, os.Stdout)
}

// ---- arguments ----------------------------------------------------------------------------

// ArgStr reads a string argument.
func ArgStr(args map[string]any, key, otherwise string) string {
	if v, ok := args[key]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return otherwise
}

// ArgInt reads an integer argument.
func ArgInt(args map[string]any, key string, otherwise int64) int64 {
	if v, ok := args[key]; ok && v != nil {
		return int64(Float(v, float64(otherwise)))
	}
	return otherwise
}

// ArgFloat reads a number argument.
func ArgFloat(args map[string]any, key string, otherwise float64) float64 {
	if v, ok := args[key]; ok && v != nil {
		return Float(v, otherwise)
	}
	return otherwise
}

// ArgBool reads a boolean argument.
func ArgBool(args map[string]any, key string, otherwise bool) bool {
	if v, ok := args[key].(bool); ok {
		return v
	}
	return otherwise
}

// ArgBytes reads a record key or value: []byte (decoded $bytes), a string, or nil.
func ArgBytes(args map[string]any, key string) []byte {
	switch v := args[key].(type) {
	case []byte:
		return v
	case string:
		return []byte(v)
	case nil:
		return nil
	default:
		return []byte(fmt.Sprint(v))
	}
}

// ArgPartitions reads "partitions" (a list of ids), else the single "partition".
func ArgPartitions(args map[string]any) []int32 {
	if list, ok := args["partitions"].([]any); ok {
		out := make([]int32, 0, len(list))
		for _, p := range list {
			out = append(out, int32(Float(p, 0)))
		}
		return out
	}
	return []int32{int32(ArgInt(args, "partition", 0))}
}

// ArgConfig is the step's own "config" object (extra client settings), or nil.
func ArgConfig(args map[string]any) map[string]any {
	if m, ok := args["config"].(map[string]any); ok {
		return m
	}
	return nil
}

// Seconds sleeps for a number of real seconds (args like pause_s, already scaled by the caller).
func Seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second))
}

// OffsetsValue is {"partition": offset} as the Java adapter reports it.
func OffsetsValue(got map[int32]int64) map[string]any {
	out := make(map[string]any, len(got))
	for p, o := range got {
		out[strconv.Itoa(int(p))] = o
	}
	return out
}

// Sorted returns the names sorted.
func Sorted(names []string) []any {
	sort.Strings(names)
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out
}

// WithConfig returns a copy of the run whose config has the step's own settings on top.
func (r *Run) WithConfig(extra map[string]any) *Run {
	if len(extra) == 0 {
		return r
	}
	cfg := make(map[string]any, len(r.Config)+len(extra))
	for k, v := range r.Config {
		cfg[k] = v
	}
	for k, v := range extra {
		cfg[k] = v
	}
	cp := *r
	cp.Config = cfg
	return &cp
}

// Outcomes collects the chaos commands' record outcomes, [n, offset, error] (offset or error
// nil), as a client's callbacks report them from its own goroutines; Drain hands them over once.
type Outcomes struct {
	mu    sync.Mutex
	items []any
}

// Add records one outcome.
func (o *Outcomes) Add(n int64, offset, err any) {
	o.mu.Lock()
	o.items = append(o.items, []any{n, offset, err})
	o.mu.Unlock()
}

// Drain returns the outcomes reported since the last call (never nil).
func (o *Outcomes) Drain() []any {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.items
	o.items = nil
	if out == nil {
		out = []any{}
	}
	return out
}

// Abandoned is the error of a call the application stopped waiting for at its deadline
// (WithinDeadline): the client's call takes no deadline of its own.
type Abandoned struct{ After time.Duration }

func (a Abandoned) Error() string {
	return fmt.Sprintf("the application stopped waiting at the step's deadline (%v): the call takes no deadline of its own "+
		"and was left running until the client was closed", a.After)
}

// WithinDeadline runs fn, a client call that takes no context or timeout, the way a Go application
// gives such a call a deadline: in a goroutine of its own, waited for until the step's deadline
// and abandoned then (fn goes on until the client under it is closed, which the step does when it
// returns). Without a deadline it is fn itself.
func WithinDeadline(step Step, fn func() (any, error)) func() (any, error) {
	deadline, ok := step.Timeout()
	if !ok {
		return fn
	}
	return func() (any, error) {
		type result struct {
			value any
			err   error
		}
		done := make(chan result, 1)
		go func() {
			v, err := fn()
			done <- result{v, err}
		}()
		timer := time.NewTimer(deadline)
		defer timer.Stop()
		select {
		case r := <-done:
			return r.value, r.err
		case <-timer.C:
			return nil, Abandoned{deadline}
		}
	}
}
