package app

import (
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// fixedCosts times what a reconcile step costs besides the engine's own
// phases (snapshot, read, check, lookup), for the step's timings: "start"
// (from the process's start to the step's: the program's start, the
// command line, the configuration), "prepare" (the cluster connection, the
// schema sources, the pipeline model and the index store) and "state"
// (opening the reconciliation state).
type fixedCosts struct {
	last    time.Time
	timings map[string]time.Duration
}

// newFixedCosts starts timing now; processStarted, when known, adds the
// "start" timing.
func newFixedCosts(processStarted time.Time) *fixedCosts {
	f := &fixedCosts{last: time.Now(), timings: map[string]time.Duration{}}
	if !processStarted.IsZero() && processStarted.Before(f.last) {
		f.timings["start"] = f.last.Sub(processStarted)
	}
	return f
}

// lap ends the phase name, started where the last one ended.
func (f *fixedCosts) lap(name string) {
	now := time.Now()
	f.timings[name] += now.Sub(f.last)
	f.last = now
}

// add adds the timings to res's.
func (f *fixedCosts) add(res *finding.Result) {
	if res.Summary.Timings == nil {
		res.Summary.Timings = map[string]time.Duration{}
	}
	for k, d := range f.timings {
		res.Summary.Timings[k] += d
	}
}
