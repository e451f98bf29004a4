// Package phase times the phases of an engine run, for the summary's
// timings; every mode of the engine (the audit, the comparison) uses it.
package phase

import "time"

// Timer records how long each phase took.
type Timer struct {
	now func() time.Time
	// Timings maps a phase's name to its duration.
	Timings map[string]time.Duration
}

// New returns a timer reading the clock now.
func New(now func() time.Time) *Timer {
	return &Timer{now: now, Timings: map[string]time.Duration{}}
}

// Run runs fn as the phase name and adds its duration to the phase's
// (a phase may run in several parts), also when it fails.
func (t *Timer) Run(name string, fn func() error) error {
	start := t.now()
	err := fn()
	t.Timings[name] += t.now().Sub(start)
	return err
}
