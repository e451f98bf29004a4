package streams

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/incremental"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// stepVisitor takes a reconcile step's part in the check of every key: it
// adds what earlier steps knew of the key to the evidence of this step's
// reads, then stages the key's new state and sorts its findings into
// open (new or still open) and resolved.
type stepVisitor struct {
	o        Options
	snap     *pipelineSnapshot
	keys     *incremental.Keys[known]
	now      int64 // the step's start, Unix ms: first_seen of new findings
	windowed bool
	rebuild  map[kread.TP]bool
	// noRecount: counts kept per key are void (checkpoint.NoRecount).
	noRecount bool
	// dlq is the dead-letter queue (nil without one): it exempts the
	// records pending in the state that were dead-lettered since.
	dlq *deadLetterQueue
	// tableFrom is, per partition of a table source's changelog, the
	// window start offset this step read it from (collector.tableFrom).
	tableFrom map[kread.TP]int64
	// whole: the step read every topic whole, as an audit does (a table
	// groupBy, stepRun.plan): the evidence is the audit's, and a key's
	// state keeps only its open findings.
	whole bool

	// The key being judged: its state before the step, whether it was
	// marked and its encoded value.
	cur       known
	curMarked bool
	curVal    []byte
	next      known

	resolved []finding.Row
	// deferred are keys whose new findings need the stage read before the
	// window (windowed steps) before their state can be staged.
	deferred []deferredKey
}

// deferredKey is a key whose state is staged after the lookups before the
// window.
type deferredKey struct {
	key        []byte
	k          known
	val        []byte
	was, marks bool
}

func (v *stepVisitor) input(name string) int {
	for x, in := range v.o.Inputs {
		if in.Name == name {
			return x
		}
	}
	return -1
}

// ahead reads the committed states of the keys the check visits next on
// a goroutine of its own (incremental.Keys.Ahead): known asks for each.
func (v *stepVisitor) ahead() index.Ahead { return v.keys.Ahead() }

func (v *stepVisitor) known(key []byte, ev *detect.KeyEvidence) error {
	v.cur.reset(len(v.o.Inputs))
	val, marked, err := v.keys.Get(key, &v.cur)
	if err != nil {
		return err
	}
	v.curMarked, v.curVal = marked, val
	if v.whole {
		return nil // the open findings only: judged for first_seen and resolved
	}
	for x := range v.cur.inputs {
		in := &v.cur.inputs[x]
		if in.copied {
			// The copy still witnesses the update while the repartition
			// topic holds it (purges only move the log start).
			if of, ok := v.snap.reparts[x].Offsets[in.copyPartition]; ok && in.copyOffset >= of.LogStart {
				ev.AddCopy(x, in.ev.TS, in.ev.FP, in.copyPartition, in.copyOffset)
			}
		}
		for _, r := range in.pending {
			if v.deadLettered(x, key, r) {
				continue // no longer kept: the next state drops it
			}
			ev.AddCandidate(x, r)
		}
		if in.has {
			ev.AddKnownCandidate(x, in.ev)
		}
		switch {
		case v.noRecount:
			ev.AddProcessedBefore(x, -1)
		case in.hasProcessed:
			ev.AddProcessedBefore(x, in.processed)
		case in.has || len(in.pending) > 0:
			ev.AddProcessedBefore(x, -1) // a state from before counts were kept
		}
	}
	for x, t := range v.cur.tables {
		for _, r := range t {
			if v.tableRecordHeld(x, r) {
				ev.Tables[x].AddChangelog(r)
			}
		}
	}
	for x, s := range v.cur.changelogs {
		if v.o.Inputs[x].Table {
			continue // resolved from the table's records (detect.KeyEvidence.resolveTable)
		}
		if !rebuilt(v.rebuild, v.o.Inputs[x].ChangelogTopic, s) {
			ev.Changelogs[x].Add(s)
		}
	}
	if !rebuilt(v.rebuild, v.o.Output, v.cur.output) {
		ev.Output.Add(v.cur.output)
	}
	for x, b := range v.cur.buffers {
		if !bufferRebuilt(v.rebuild, v.o.Inputs[x].BufferTopic, b) {
			ev.Buffers[x].Add(b)
		}
	}
	return nil
}

// tableRecordHeld reports whether record r of input x's table changelog,
// kept by an earlier step, is one an audit now would read: its partition
// is not being rebuilt, and r lies at or after the log start (a purge, or
// a compaction that removed a tombstone) and the window start.
func (v *stepVisitor) tableRecordHeld(x int, r detect.TableRecord) bool {
	tp := kread.TP{Topic: v.o.Inputs[x].ChangelogTopic, Partition: r.Partition}
	if v.rebuild[tp] {
		return false
	}
	if of, ok := v.snap.changelogs[x].Offsets[r.Partition]; ok && r.Offset < of.LogStart {
		return false
	}
	if from, ok := v.tableFrom[tp]; ok && r.Offset < from {
		return false
	}
	return true
}

// deadLettered reports whether input x's record r, pending at the second
// hop in an earlier step, was dead-lettered since (its copy, processed
// now, is named by the dead-letter queue), and lists it if so.
func (v *stepVisitor) deadLettered(x int, key []byte, r detect.InputRecord) bool {
	if v.dlq == nil {
		return false
	}
	in := v.o.Inputs[x]
	rec := kread.Record{Topic: in.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.TS}
	return v.dlq.exempt(x, in.Name, &rec, true, true, true, key, r.TS, r.FP)
}

func (v *stepVisitor) judged(ev *detect.KeyEvidence, rows []finding.Row, held []heldRow) ([]finding.Row, error) {
	n := len(v.o.Inputs)
	next := &v.next
	next.reset(n)
	pending := false
	for x := range ev.Inputs {
		in := &ev.Inputs[x]
		ki := &next.inputs[x]
		ki.has, ki.ev = in.Has, in.Evidence
		if n := in.Processed(); n >= 0 {
			ki.hasProcessed, ki.processed = true, n
		}
		ki.pending = append(ki.pending[:0], in.PendingRecords...)
		pending = pending || len(ki.pending) > 0
		if p, off, ok := ev.Copy(x); ok {
			ki.copied, ki.copyPartition, ki.copyOffset = true, p, off
		}
	}
	copy(next.changelogs, ev.Changelogs)
	next.output = ev.Output
	copy(next.buffers, ev.Buffers)
	for x := range v.o.Inputs {
		if !v.o.Inputs[x].Table {
			continue
		}
		// The step reads the table's input whole: only its changelog's
		// last records are kept.
		next.inputs[x] = knownInput{pending: next.inputs[x].pending[:0]}
		next.changelogs[x] = detect.StageState{}
		for _, r := range ev.Tables[x].Changelog {
			next.tables[x] = append(next.tables[x], r)
		}
		slices.SortFunc(next.tables[x], func(a, b detect.TableRecord) int { return int(a.Partition - b.Partition) })
	}
	if v.whole {
		next.reset(n)
		pending = false
	}

	lookup := false
	for i := range rows {
		r := &rows[i]
		x := v.input(r.Input)
		of := openFinding{x: x, firstSeen: v.now}
		if p := v.cur.findOpen(r.Stage, x); p != nil {
			of.firstSeen = p.firstSeen
			of.looked, of.hasBefore, of.beforeTS = p.looked, p.hasBefore, p.beforeTS
		}
		if v.windowed && !r.HasObserved {
			switch {
			case !of.looked:
				lookup = true
			case of.hasBefore:
				r.HasObserved, r.ObservedTS = true, of.beforeTS
				if r.Kind == finding.Missing {
					r.Kind = finding.Stale
				}
			}
		}
		r.FirstSeen = time.UnixMilli(of.firstSeen).UTC()
		of.row = *r
		of.row.Key = nil
		next.open = append(next.open, of)
	}
	for _, p := range v.cur.open {
		if next.findOpen(p.row.Stage, p.x) != nil {
			continue
		}
		if isHeld(held, p.row.Stage, p.x) {
			p.withheld = true // neither reported nor resolved while the partition is stuck
			next.open = append(next.open, p)
			continue
		}
		r := p.row
		r.Key = append([]byte(nil), ev.Key...)
		r.FirstSeen = time.UnixMilli(p.firstSeen).UTC()
		v.resolved = append(v.resolved, r)
	}
	marks := pending || len(next.open) > 0 || len(held) > 0
	for _, b := range ev.Buffers {
		// A key its suppress buffer holds is judged again by every step
		// until it is evicted, so that each step counts the keys pending
		// in the buffer as a full audit does (at most the buffer's keys).
		marks = marks || detect.BufferPending(b)
	}
	if lookup {
		d := deferredKey{key: append([]byte(nil), ev.Key...), val: append([]byte(nil), v.curVal...), was: v.curMarked, marks: marks}
		d.k.copyFrom(next)
		v.deferred = append(v.deferred, d)
		return rows, nil
	}
	return rows, v.stage(ev.Key, next, v.curVal, v.curMarked, marks)
}

// stage stages the key's new state and mark, when they changed.
func (v *stepVisitor) stage(key []byte, k *known, old []byte, was, marks bool) error {
	return v.keys.Stage(key, k, old, was, marks)
}

// lookBefore completes, for a windowed step, the new findings that say a
// stage holds nothing newer than the lost update, reading the stage before
// the window as a windowed audit does (lookBeforeWindow), and stages the
// deferred keys with what was found, so that later steps do not read it
// again.
func (v *stepVisitor) lookBefore(ctx context.Context, rows []finding.Row) error {
	type ref struct {
		d, o int // deferred key, open finding
	}
	want := map[string]ref{}
	for d := range v.deferred {
		for o, of := range v.deferred[d].k.open {
			if !of.looked && !of.row.HasObserved {
				want[fmt.Sprintf("%s\x00%d\x00%s", of.row.Stage, of.x, v.deferred[d].key)] = ref{d, o}
			}
		}
	}
	var idx []int
	var sub []finding.Row
	for i, r := range rows {
		if _, ok := want[fmt.Sprintf("%s\x00%d\x00%s", r.Stage, v.input(r.Input), r.Key)]; ok && !r.HasObserved {
			idx = append(idx, i)
			sub = append(sub, r)
		}
	}
	if err := lookBeforeWindow(ctx, v.o, v.snap, sub); err != nil {
		return err
	}
	for j, i := range idx {
		rows[i] = sub[j]
		r := want[fmt.Sprintf("%s\x00%d\x00%s", sub[j].Stage, v.input(sub[j].Input), sub[j].Key)]
		of := &v.deferred[r.d].k.open[r.o]
		of.looked, of.hasBefore, of.beforeTS = true, sub[j].HasObserved, sub[j].ObservedTS
		of.row = sub[j]
		of.row.Key = nil
	}
	for i := range v.deferred {
		d := &v.deferred[i]
		if err := v.stage(d.key, &d.k, d.val, d.was, d.marks); err != nil {
			return err
		}
	}
	v.deferred = nil
	return nil
}

func isHeld(held []heldRow, stage finding.Stage, x int) bool {
	for _, h := range held {
		if h.stage == stage && h.x == x {
			return true
		}
	}
	return false
}

// findOpen returns k's open finding at stage for input x, or nil.
func (k *known) findOpen(stage finding.Stage, x int) *openFinding {
	for i := range k.open {
		if k.open[i].row.Stage == stage && k.open[i].x == x {
			return &k.open[i]
		}
	}
	return nil
}

// copyFrom makes k a deep copy of src.
func (k *known) copyFrom(src *known) {
	k.reset(len(src.inputs))
	for x, in := range src.inputs {
		p := k.inputs[x].pending
		k.inputs[x] = in
		k.inputs[x].pending = append(p[:0], in.pending...)
	}
	copy(k.changelogs, src.changelogs)
	k.output = src.output
	copy(k.buffers, src.buffers)
	for x := range src.tables {
		k.tables[x] = append(k.tables[x][:0], src.tables[x]...)
	}
	k.open = append(k.open[:0], src.open...)
}
