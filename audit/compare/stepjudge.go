package compare

import (
	"cmp"
	"slices"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/incremental"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
)

// stepVisitor takes a reconcile step's part in the check of every pair
// identity: it adds what earlier steps kept of the identity to the entries
// this step read, judges the whole with the comparison's detector
// (detect.Copies, as a full comparison does), stages the identity's new
// state, and sorts its findings into open (new or still open, with
// first_seen) and resolved.
type stepVisitor struct {
	keys *incremental.Keys[idState]
	now  int64 // the step's start, Unix ms: first_seen of new findings

	cur, next idState
	ev        detect.CopyEvidence
	// This step's entries of the identity.
	newDue                 []detect.Record
	newAt                  []finding.Coord
	newSink, newPending    int64
	firstNew, firstPending detect.Record

	judged   int64
	resolved []finding.Row
}

func coordCmp(ap int32, ao int64, bp int32, bo int64) int {
	if c := cmp.Compare(ap, bp); c != 0 {
		return c
	}
	return cmp.Compare(ao, bo)
}

func recordCmp(a, b detect.Record) int { return coordCmp(a.Partition, a.Offset, b.Partition, b.Offset) }

// contribution is what an identity with due, pending and sink records adds
// to its pair's identities and unexplained counters (as detect.Copies
// counts them).
func contribution(due, pending, sink int64) (checked, unexplained int64) {
	if due+pending == 0 {
		return 0, sink
	}
	return 1, 0
}

// fold reads this step's entries of one identity.
func (v *stepVisitor) fold(c *index.Cursor) error {
	v.newDue, v.newAt, v.newSink, v.newPending = v.newDue[:0], v.newAt[:0], 0, 0
	return eachPairEntry(c, func(tag byte, r detect.Record) {
		switch tag {
		case tagSink: // by partition and offset
			if v.newSink == 0 {
				v.firstNew = own(r)
			}
			v.newSink++
			if len(v.newAt) < finding.MaxCoords {
				v.newAt = append(v.newAt, finding.Coord{Partition: r.Partition, Offset: r.Offset})
			}
		case tagPending:
			if v.newPending == 0 {
				v.firstPending = own(r)
			}
			v.newPending++
		case tagDue:
			v.newDue = append(v.newDue, own(r))
		}
	})
}

func own(r detect.Record) detect.Record {
	if r.Key != nil {
		r.Key = append([]byte{}, r.Key...)
	}
	return r
}

func (v *stepVisitor) judge(x int, key []byte, c *index.Cursor, spec *detect.PairSpec, stuck bool, res *checked) error {
	v.judged++
	v.cur.reset()
	old, marked, err := v.keys.Get(key, &v.cur)
	if err != nil {
		return err
	}
	if err := v.fold(c); err != nil {
		return err
	}
	cur, next := &v.cur, &v.next
	next.reset()

	// The identity's facts: the copies (earlier and new: new copies lie
	// above what earlier steps read of each sink partition, so the first
	// copies of the union are among the first of each), the pending
	// records (all read by this step) and every due record.
	next.sink = cur.sink + v.newSink
	next.sinkAt = append(append(next.sinkAt, cur.sinkAt...), v.newAt...)
	slices.SortFunc(next.sinkAt, func(a, b finding.Coord) int { return coordCmp(a.Partition, a.Offset, b.Partition, b.Offset) })
	next.sinkAt = next.sinkAt[:min(len(next.sinkAt), finding.MaxCoords)]
	switch {
	case cur.sink == 0:
		next.firstSink = v.firstNew
	case v.newSink == 0 || recordCmp(cur.firstSink, v.firstNew) <= 0:
		next.firstSink = cur.firstSink
	default:
		next.firstSink = v.firstNew
	}
	next.pending = v.newPending
	next.due = append(append(next.due, cur.due...), v.newDue...)
	slices.SortFunc(next.due, recordCmp)

	ev := &v.ev
	ev.Reset()
	ev.Sink, ev.SinkAt, ev.FirstSink = next.sink, append(ev.SinkAt, next.sinkAt...), next.firstSink
	if v.newPending > 0 {
		ev.AddPending(v.firstPending)
		ev.Pending = v.newPending
	}
	for _, r := range next.due {
		ev.AddDue(r)
	}
	n := len(res.rows)
	var cc detect.CopyCounts
	res.rows, cc = detect.Copies(spec, ev, res.rows)
	oc, ou := contribution(int64(len(cur.due)), cur.pending, cur.sink)
	res.identities[x] += cc.Checked - oc
	res.unexplained[x] += cc.Unexplained - ou
	held := false
	if stuck {
		w := res.withheld
		res.rows = withhold(res.rows, n, &res.withheld)
		held = res.withheld > w
	}

	// Open findings: first_seen kept from the step that first reported
	// each; those no longer reported are resolved, unless withheld.
	for i := n; i < len(res.rows); i++ {
		r := &res.rows[i]
		o := openRow{kind: r.Kind, partition: r.Partition, offset: r.Offset, ts: r.Timestamp, key: r.Key, firstSeen: v.now}
		if p := cur.find(r.Kind, r.Partition, r.Offset); p != nil {
			o.firstSeen = p.firstSeen
		}
		r.FirstSeen = time.UnixMilli(o.firstSeen).UTC()
		next.open = append(next.open, o)
	}
	for _, p := range cur.open {
		if next.find(p.kind, p.partition, p.offset) != nil {
			continue
		}
		if stuck && p.kind == finding.Missing {
			p.withheld = true
			next.open = append(next.open, p)
			continue
		}
		topic := spec.Source
		if p.kind == finding.Unexpected {
			topic = spec.Sink
		}
		v.resolved = append(v.resolved, finding.Row{Kind: p.kind, Stage: finding.StageSink, Input: spec.Name, Key: p.key, Topic: topic,
			Partition: p.partition, Offset: p.offset, Timestamp: p.ts, ExpectedTS: p.ts, FirstSeen: time.UnixMilli(p.firstSeen).UTC()})
	}
	marks := next.pending > 0 || len(next.open) > 0 || held
	return v.keys.Stage(key, next, old, marked, marks)
}
