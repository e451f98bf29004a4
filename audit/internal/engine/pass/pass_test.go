package pass

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
)

// recorder is a mode that records the calls of the pass, failing at one.
type recorder struct {
	calls   []string
	failAt  string
	lookup  bool
	prelude string
	w       *index.Writer
	stats   collect.Stats
}

func (r *recorder) call(name string) error {
	r.calls = append(r.calls, name)
	if name == r.failAt {
		return errors.New("failed at " + name)
	}
	return nil
}

func (r *recorder) Start(w *index.Writer, _ time.Time) { r.w = w; r.calls = append(r.calls, "start") }
func (r *recorder) Snapshot(context.Context) error     { return r.call("snapshot") }
func (r *recorder) Read(context.Context) error {
	if err := r.w.Add([]byte("k"), 1, nil, nil); err != nil {
		return err
	}
	return r.call("read")
}
func (r *recorder) Partitions() []finding.PartitionFinding {
	r.calls = append(r.calls, "partitions")
	return nil
}
func (r *recorder) Check([]finding.PartitionFinding) error { return r.call("check") }
func (r *recorder) Assemble(context.Context, []finding.PartitionFinding) (*finding.Result, error) {
	return &finding.Result{}, r.call("assemble")
}
func (r *recorder) Stats() *collect.Stats { return &r.stats }

type tailed struct{ *recorder }

func (t tailed) Tails(context.Context) error  { return t.call("tails") }
func (t tailed) Settle(context.Context) error { return t.call("settle") }

type looked struct{ tailed }

func (l looked) NeedsLookup() bool            { return l.lookup }
func (l looked) Lookup(context.Context) error { return l.call("lookup") }
func (l looked) Prelude() (string, func(context.Context) error) {
	if l.prelude == "" {
		return "", nil
	}
	return l.prelude, func(context.Context) error { return l.call(l.prelude) }
}

// TestOrder checks the order of the phases (the snapshot's second half
// after the tails and before anything downstream is read), the phases
// timed, and that a failure stops the pass with nothing flushed.
func TestOrder(t *testing.T) {
	tests := []struct {
		name    string
		mode    func(r *recorder) Mode
		failAt  string
		lookup  bool
		prelude string
		want    []string
		timed   []string
	}{
		{name: "plain", mode: func(r *recorder) Mode { return r },
			want: []string{"start", "snapshot", "read", "partitions", "check", "assemble"}, timed: []string{"check", "read", "snapshot"}},
		{name: "tailed", mode: func(r *recorder) Mode { return tailed{r} },
			want: []string{"start", "snapshot", "tails", "settle", "read", "partitions", "check", "assemble"}, timed: []string{"check", "read", "snapshot"}},
		{name: "no lookup needed", mode: func(r *recorder) Mode { return looked{tailed{r}} },
			want: []string{"start", "snapshot", "tails", "settle", "read", "partitions", "check", "assemble"}, timed: []string{"check", "read", "snapshot"}},
		{name: "lookup and prelude", mode: func(r *recorder) Mode { return looked{tailed{r}} }, lookup: true, prelude: "ledger",
			want:  []string{"start", "ledger", "snapshot", "tails", "settle", "read", "partitions", "check", "lookup", "assemble"},
			timed: []string{"check", "ledger", "lookup", "read", "snapshot"}},
		{name: "tails fail", mode: func(r *recorder) Mode { return tailed{r} }, failAt: "tails",
			want: []string{"start", "snapshot", "tails"}},
		{name: "settle fails", mode: func(r *recorder) Mode { return tailed{r} }, failAt: "settle",
			want: []string{"start", "snapshot", "tails", "settle"}},
		{name: "check fails", mode: func(r *recorder) Mode { return r }, failAt: "check",
			want: []string{"start", "snapshot", "read", "partitions", "check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := index.Open(t.TempDir(), index.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			r := &recorder{failAt: tt.failAt, lookup: tt.lookup, prelude: tt.prelude}
			res, err := Run(context.Background(), Config{Store: st, Now: time.Now}, tt.mode(r))
			if !reflect.DeepEqual(r.calls, tt.want) {
				t.Errorf("calls %q, want %q", r.calls, tt.want)
			}
			if tt.failAt != "" {
				if err == nil || res != nil {
					t.Fatalf("failing at %s gave %v, %v; want an error and no result", tt.failAt, res, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var timed []string
			for k := range res.Summary.Timings {
				timed = append(timed, k)
			}
			slices.Sort(timed)
			if !reflect.DeepEqual(timed, tt.timed) {
				t.Errorf("timed %q, want %q", timed, tt.timed)
			}
			if res.Summary.Index.Entries != 1 || res.Summary.Finished.Before(res.Summary.Started) {
				t.Errorf("index %+v, started %v, finished %v", res.Summary.Index, res.Summary.Started, res.Summary.Finished)
			}
		})
	}
}
