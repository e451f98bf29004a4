package streams

import (
	"fmt"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// checked is what the check phase found.
type checked struct {
	rows []finding.Row
	// checkedChangelog and checkedOutput count the (input, key) pairs
	// checked at each stage; withheld the rows held back.
	checkedChangelog, checkedOutput, withheld int64
	// checkedCount counts the (input, key) pairs whose count was checked;
	// counted says whether any input is a count.
	checkedCount int64
	counted      bool
	// pending counts, per input, the candidates pending at the second hop.
	pending []int64
	// keys counts the keys checked.
	keys int64
	// bufferPending counts the (input, key) pairs the output owes that a
	// suppress buffer still holds (detect.KeyCounts.BufferPending).
	bufferPending int64
	// finalOpen and finalExpired count the windows of an input emitted
	// final that were not checked (detect.KeyCounts.FinalOpen,
	// FinalExpired).
	finalOpen, finalExpired int64
}

// heldRow names a row that the check withheld for a key.
type heldRow struct {
	stage finding.Stage
	x     int
}

// keyVisitor lets a mode of the engine take part in the check of every
// key (a reconcile step: its state). known adds what the mode knows of
// the key to ev (see fold); judged receives the key's evidence, the rows
// the check found and the rows it withheld, and returns the rows to
// report.
type keyVisitor interface {
	known(key []byte, ev *detect.KeyEvidence) error
	judged(ev *detect.KeyEvidence, rows []finding.Row, held []heldRow) ([]finding.Row, error)
	// ahead is told the keys the check visits next (nil for nothing).
	ahead() index.Ahead
}

// check streams the index key by key through the core check. Candidates
// pending at the second hop move from audited to pending on tl. v, when
// not nil, takes part in every key's check. final, when not nil, places
// the windows of a windowed input emitted final (collector.finalPlace).
func check(o Options, snap *pipelineSnapshot, stuck map[kread.TP]bool, tl *timeline, v keyVisitor, final func([]byte, int32, int64) detect.FinalPlace) (*checked, error) {
	spec := &detect.KeySpec{Join: o.Join, Cogroup: o.Cogroup, NoOutput: o.Output == ""}
	for _, in := range o.Inputs {
		topic, rt := in.Topic, in.RepartitionTopic
		if in.Window != nil {
			topic = windowSource(in) // where a windowed input's records were read: the rows' replay coordinates
			rt = topic
		}
		// A reconcile step (v) reads only what is new: its key visitor
		// adds what earlier steps counted (detect.InputState.Processed).
		is := detect.InputSpec{Name: in.Name, Topic: topic, RepartitionTopic: rt,
			ChangelogTopic: in.ChangelogTopic, Count: in.Count, Table: in.Table, NoChangelog: in.Table && in.ChangelogTopic == "", Buffered: in.BufferTopic != ""}
		if in.Window != nil && in.BufferTopic != "" {
			is.Final = final
		}
		spec.Inputs = append(spec.Inputs, is)
	}
	var held []heldRow
	if len(stuck) > 0 {
		// A stuck dead-letter partition may hide the record that exempts
		// any input record: every row is withheld.
		dlqStuck := false
		stuckTopics := make(map[string]bool)
		for tp := range stuck {
			dlqStuck = dlqStuck || (o.DeadLetterTopic != "" && tp.Topic == o.DeadLetterTopic)
			stuckTopics[tp.Topic] = true
		}
		spec.Withheld = func(stage finding.Stage, x int, key []byte) bool {
			if dlqStuck {
				held = append(held, heldRow{stage, x})
				return true
			}
			// A windowed key ([key][window start]) is not the bytes Kafka
			// Streams partitions by either (the task's partition, the base
			// key's hash): any stuck partition of the topic withholds.
			windowed := o.windowed() >= 0
			t, normalized := snap.output, o.OutputKey != nil || windowed
			if stage == finding.StageChangelog {
				t, normalized = snap.changelogs[x], o.Inputs[x].DownstreamKey != nil || windowed
			}
			// The key's partition is murmur2 of the bytes the producer
			// wrote; a normalized key (Avro framing stripped) no longer
			// has them, so any stuck partition of the topic withholds.
			w := stuckTopics[t.Name] && (normalized || stuck[kread.TP{Topic: t.Name, Partition: partitionFor(key, len(t.Parts))}])
			if b := snap.buffers; stage == finding.StageOutput && x < len(b) && b[x].Name != "" && stuckTopics[b[x].Name] {
				// The buffer's record of the key decides whether the
				// output owes it (its key normalized as the changelog's).
				bn := o.Inputs[x].DownstreamKey != nil || windowed // a window is partitioned by its base key
				w = w || bn || stuck[kread.TP{Topic: b[x].Name, Partition: partitionFor(key, len(b[x].Parts))}]
			}
			if w {
				held = append(held, heldRow{stage, x})
			}
			return w
		}
	}
	res := &checked{pending: make([]int64, len(o.Inputs))}
	for _, in := range spec.Inputs {
		res.counted = res.counted || in.Count
	}
	ev := detect.NewKeyEvidence(len(o.Inputs))
	var ahead index.Ahead
	if v != nil {
		ahead = v.ahead()
	}
	err := o.Store.EachKeyAhead(ahead, func(key []byte, c *index.Cursor) error {
		var known func() error
		if v != nil {
			known = func() error { return v.known(key, ev) }
		}
		if err := fold(key, c, ev, len(o.Inputs), tl.movePending, known); err != nil {
			return err
		}
		var kc detect.KeyCounts
		n := len(res.rows)
		held = held[:0]
		res.rows, kc = detect.Keys(spec, ev, res.rows)
		if v != nil {
			rows, err := v.judged(ev, res.rows[n:], held)
			if err != nil {
				return err
			}
			res.rows = append(res.rows[:n], rows...)
		}
		res.keys++
		res.checkedChangelog += int64(kc.CheckedChangelog)
		res.checkedOutput += int64(kc.CheckedOutput)
		res.checkedCount += int64(kc.CheckedCount)
		res.withheld += int64(kc.Withheld)
		res.bufferPending += int64(kc.BufferPending)
		res.finalOpen += int64(kc.FinalOpen)
		res.finalExpired += int64(kc.FinalExpired)
		for x := range ev.Inputs {
			res.pending[x] += ev.Inputs[x].Pending
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit: checking the index: %w", err)
	}
	return res, nil
}
