package schema

import (
	"context"
	"errors"
	"sort"

	"github.com/lossaudit/lossaudit/config/typo"
)

// SourceStatus says how one schema source fared during a run: Error is why
// it was found unavailable, ServedBy the sources that answered lookups
// after it failed.
type SourceStatus struct {
	Source   string
	Error    string
	ServedBy []string
}

// Status lists the sources found unavailable during the run, in chain
// order, with the sources that served lookups instead.
func (r *Registry) Status() []SourceStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []SourceStatus
	for i, s := range r.sources {
		why, down := r.downWhy[i]
		if !down {
			continue
		}
		st := SourceStatus{Source: sourceName(s), Error: why}
		for j := i + 1; j < len(r.sources); j++ {
			if r.served[j] > 0 {
				st.ServedBy = append(st.ServedBy, sourceName(r.sources[j]))
			}
		}
		out = append(out, st)
	}
	return out
}

// markDown records that source i could not answer, and why (the first
// reason is kept).
// The reason is recorded before the source is marked down, so a lookup that
// skips it can always say why (downReason).
func (r *Registry) markDown(i int, err error) {
	r.mu.Lock()
	if _, ok := r.downWhy[i]; !ok {
		r.downWhy[i] = err.Error()
	}
	r.mu.Unlock()
	r.down[i].Store(true)
}

// downReason is why source i was marked down (markDown's first reason).
func (r *Registry) downReason(i int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.downWhy[i]
}

// markServed records that source i answered a lookup.
func (r *Registry) markServed(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.served[i]++
}

// FieldPaths lists the field paths of schema id's records (see
// avroproj.Schema.FieldPaths).
func (r *Registry) FieldPaths(ctx context.Context, id uint32) ([]string, error) {
	w, err := r.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	return w.proj.FieldPaths(), nil
}

// NearestFields returns up to n field paths of schema id closest to path
// by edit distance (ties by name), for telling a user which field a
// mistyped path probably meant; nil when the schema cannot be looked up.
func (r *Registry) NearestFields(ctx context.Context, id uint32, path string, n int) []string {
	paths, err := r.FieldPaths(ctx, id)
	if err != nil || len(paths) == 0 {
		return nil
	}
	type cand struct {
		p string
		d int
	}
	cs := make([]cand, 0, len(paths))
	for _, p := range paths {
		cs = append(cs, cand{p, typo.Distance(path, p)})
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].p < cs[j].p
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.p)
	}
	return out
}

// ErrRejected is wrapped by errors of a schema registry that rejected the
// request's credentials (HTTP 401 or 403): a configuration problem.
var ErrRejected = errors.New("schema registry rejected the credentials")

// RejectedError is a registry's refusal, in words (Msg), that errors.Is
// finds as ErrRejected.
type RejectedError struct{ Msg string }

func (e *RejectedError) Error() string        { return e.Msg }
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }
