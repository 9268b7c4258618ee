package lineproto

import (
	"time"
)

// TxnCalls are a client's transactional calls for TxnProbe: init, begin, send (one record,
// waited for), commit and abort, each returning the client's error.
type TxnCalls map[string]func() error

// TxnProbe runs the txn_error_probe step (conformance/adapters/txn_probe.py, the same sequence):
// a transaction under a fault that answers one error; the first call that fails is recorded;
// once the fault is over (clear_s after the start, already scaled) the same call again
// (commit after a send or a commit), then abort, then a new transaction. name gives each error
// as the client raised it. The harness (conformance/txn_errors/) reads the class from the value.
func TxnProbe(step Step, calls TxnCalls, name func(error) string) Outcome {
	t0 := time.Now()
	attempt := func(keys ...string) string {
		for _, key := range keys {
			if err := calls[key](); err != nil {
				return name(err)
			}
		}
		return "ok"
	}
	took := map[string]float64{}
	var failed string
	var failure error
	var after time.Duration
	for _, key := range []string{"init", "begin", "send", "commit"} {
		start := time.Now()
		err := calls[key]()
		took[key] = time.Since(start).Seconds()
		if err != nil {
			failed, failure, after = key, err, time.Since(start)
			break
		}
	}
	if failed == "" {
		slowest := "init"
		for k, v := range took {
			if v > took[slowest] {
				slowest = k
			}
		}
		return Ok(step.Kind, Seconds(took[slowest]), map[string]any{"call": nil, "slowest": slowest, "took": took})
	}
	time.Sleep(time.Until(t0.Add(Seconds(ArgFloat(step.Args, "clear_s", 0)))))
	again := "commit"
	if failed == "init" {
		again = "init"
	}
	retry := attempt(again)
	var abort, next any
	if failed != "init" && retry != "ok" {
		abort = attempt("abort")
	}
	if (failed == "init" && retry == "ok") || abort == "ok" {
		next = attempt("begin", "send", "commit")
	}
	o := Failed(step.Kind, after, name(failure), failure.Error())
	o.Value = map[string]any{"call": failed, "took": took, "retry": retry, "abort": abort, "next": next}
	return o
}
