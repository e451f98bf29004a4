package detect

import (
	"github.com/lossaudit/lossaudit/audit/finding"
)

// InputRecord locates one input record that counts for the audit.
type InputRecord struct {
	TS        int64
	Partition int32
	Offset    int64
	// FP fingerprints the value, to match the record's repartition copy.
	FP uint64
}

// newer orders candidates: by timestamp, then partition, then offset.
func (r InputRecord) newer(o InputRecord) bool {
	if r.TS != o.TS {
		return r.TS > o.TS
	}
	if r.Partition != o.Partition {
		return r.Partition > o.Partition
	}
	return r.Offset > o.Offset
}

// InputState is what is known of one input for one key.
type InputState struct {
	// Has is true when at least one candidate record is not pending at the
	// second hop; Evidence is then the newest such record.
	Has      bool
	Evidence InputRecord
	// Candidates counts the records of this input for the key that count
	// (committed, processed at the first hop, in the window, with a value
	// and a selected key); Pending counts those of them whose repartition
	// copy is still in the unprocessed tail (pending at the second hop).
	Candidates int64
	Pending    int64
	// PendingRecords are the candidates counted in Pending, in the order
	// they were added: what an incremental step must judge again later.
	PendingRecords []InputRecord
	// Before counts the processed candidates an earlier reconcile step
	// counted (AddProcessedBefore), -1 when unknown; Readded counts the
	// candidates added again from such a step's state (AddKnownCandidate),
	// already in Before. Both are 0 in an audit.
	Before, Readded int64
}

// Processed is the number of the key's records of the input that the
// application processed (both hops): the candidates not pending, with
// those an earlier step counted; -1 when an earlier step's count is
// unknown.
func (in *InputState) Processed() int64 {
	if in.Before < 0 {
		return -1
	}
	return in.Before + in.Candidates - in.Pending - in.Readded
}

// StageState is what one changelog, or the output, holds for a key.
type StageState struct {
	// Has is true when a committed record exists; TS, Offset and Tombstone
	// describe the newest one (by timestamp, then offset).
	Has       bool
	TS        int64
	Offset    int64
	Tombstone bool
	// HasAborted is true when an aborted record exists; AbortedTS is the
	// newest aborted timestamp.
	HasAborted bool
	AbortedTS  int64
	// Partition is the partition of the stage's records of the key (all of
	// one key's records are in one partition); meaningful when Has or
	// HasAborted.
	Partition int32
	// HasCount is true when the newest committed record is a count's
	// value (AddChangelogCount); Count is that value.
	HasCount bool
	Count    int64
}

type recID struct {
	ts int64
	fp uint64
}

type copyAt struct {
	partition int32
	offset    int64
}

// KeyEvidence gathers everything known about one selected key. Facts can
// be added in any order with one rule: an input's repartition tail
// (AddTail) must be complete before that input's candidates are added,
// because a candidate matching the tail is pending, not evidence. The
// index yields entries in that order. Reset reuses the value for the next
// key.
type KeyEvidence struct {
	Key        []byte
	Inputs     []InputState
	Changelogs []StageState
	Output     StageState
	// Buffers are what each input's suppress buffer changelog holds of
	// the key (InputSpec.Buffered).
	Buffers []BufferState
	// Tables holds, for inputs read by a table source (InputSpec.Table),
	// the records the table rule needs (TableLast); Keys derives Inputs
	// and Changelogs of those inputs from it.
	Tables []TableInput

	tails  []map[recID]struct{}
	copies []map[recID]copyAt
}

// NewKeyEvidence returns evidence for a pipeline of n inputs.
func NewKeyEvidence(n int) *KeyEvidence {
	e := &KeyEvidence{Inputs: make([]InputState, n), Changelogs: make([]StageState, n), Buffers: make([]BufferState, n), Tables: make([]TableInput, n),
		tails: make([]map[recID]struct{}, n), copies: make([]map[recID]copyAt, n)}
	for i := range n {
		e.tails[i] = map[recID]struct{}{}
		e.copies[i] = map[recID]copyAt{}
	}
	return e
}

// Reset forgets everything and starts on key (copied).
func (e *KeyEvidence) Reset(key []byte) {
	e.Key = append(e.Key[:0], key...)
	clear(e.Inputs)
	clear(e.Changelogs)
	clear(e.Buffers)
	e.Output = StageState{}
	for i := range e.Tables {
		e.Tables[i].reset()
	}
	for i := range e.tails {
		clear(e.tails[i])
		clear(e.copies[i])
	}
}

// AddTail records a record of input x's repartition topic at or above the
// group's committed offset: not yet processed by the reduce.
func (e *KeyEvidence) AddTail(x int, ts int64, fp uint64) {
	e.tails[x][recID{ts, fp}] = struct{}{}
}

// AddCopy records a processed record of input x's repartition topic (below
// the committed offset) at partition/offset. Of copies with equal
// timestamp and fingerprint the first by (partition, offset) is kept.
func (e *KeyEvidence) AddCopy(x int, ts int64, fp uint64, partition int32, offset int64) {
	id, c := recID{ts, fp}, copyAt{partition, offset}
	if o, ok := e.copies[x][id]; !ok || c.partition < o.partition || (c.partition == o.partition && c.offset < o.offset) {
		e.copies[x][id] = c
	}
}

// AddCandidate records a record of input x that counts for the audit. It
// is pending at the second hop when the repartition tail holds a record
// with its timestamp and fingerprint (the key is the same by construction);
// otherwise the newest such record is the evidence.
func (e *KeyEvidence) AddCandidate(x int, r InputRecord) {
	in := &e.Inputs[x]
	in.Candidates++
	if e.linkPending(x, r) {
		in.Pending++
		in.PendingRecords = append(in.PendingRecords, r)
		return
	}
	if !in.Has || r.newer(in.Evidence) {
		in.Has, in.Evidence = true, r
	}
}

// AddKnownCandidate is AddCandidate for a candidate a reconcile step
// counted already (its state's evidence): it is evidence again, and not
// counted twice by Processed.
func (e *KeyEvidence) AddKnownCandidate(x int, r InputRecord) {
	e.Inputs[x].Readded++
	e.AddCandidate(x, r)
}

// AddProcessedBefore records that earlier reconcile steps counted n
// processed candidates of input x for the key (-1: unknown, a state
// written before they were counted).
func (e *KeyEvidence) AddProcessedBefore(x int, n int64) {
	e.Inputs[x].Before = n
}

func (s *StageState) addCommitted(partition int32, ts, offset int64, tombstone bool) bool {
	newest := !s.Has || ts > s.TS || (ts == s.TS && offset > s.Offset)
	if newest {
		s.Has, s.TS, s.Offset, s.Tombstone = true, ts, offset, tombstone
		s.HasCount, s.Count = false, 0
	}
	s.Partition = partition
	return newest
}

func (s *StageState) addAborted(partition int32, ts int64) {
	if !s.HasAborted || ts > s.AbortedTS {
		s.HasAborted, s.AbortedTS = true, ts
	}
	s.Partition = partition
}

// Add folds st (what is known of the stage from elsewhere, an earlier
// step) into s, as if its records had been added one by one.
func (s *StageState) Add(st StageState) {
	if st.Has && s.addCommitted(st.Partition, st.TS, st.Offset, st.Tombstone) {
		s.HasCount, s.Count = st.HasCount, st.Count
	}
	if st.HasAborted {
		s.addAborted(st.Partition, st.AbortedTS)
	}
}

// AddChangelog records a committed record of input x's changelog, in
// partition.
func (e *KeyEvidence) AddChangelog(x int, partition int32, ts, offset int64, tombstone bool) {
	e.Changelogs[x].addCommitted(partition, ts, offset, tombstone)
}

// AddChangelogCount records a committed record of input x's changelog
// whose value is a count (a Long).
func (e *KeyEvidence) AddChangelogCount(x int, partition int32, ts, offset, count int64) {
	s := &e.Changelogs[x]
	if s.addCommitted(partition, ts, offset, false) {
		s.HasCount, s.Count = true, count
	}
}

// AddChangelogAborted records an aborted record of input x's changelog.
func (e *KeyEvidence) AddChangelogAborted(x int, partition int32, ts int64) {
	e.Changelogs[x].addAborted(partition, ts)
}

// AddBuffer records a committed record of input x's suppress buffer
// changelog; tombstone says its value was null.
func (e *KeyEvidence) AddBuffer(x int, partition int32, offset int64, tombstone bool) {
	e.Buffers[x].add(partition, offset, tombstone)
}

// AddOutput records a committed record of the output topic.
func (e *KeyEvidence) AddOutput(partition int32, ts, offset int64, tombstone bool) {
	e.Output.addCommitted(partition, ts, offset, tombstone)
}

// AddOutputAborted records an aborted record of the output topic.
func (e *KeyEvidence) AddOutputAborted(partition int32, ts int64) { e.Output.addAborted(partition, ts) }

// Copy returns where input x's repartition topic holds the processed copy
// of the evidence (the first by partition and offset), if it does.
func (e *KeyEvidence) Copy(x int) (partition int32, offset int64, ok bool) {
	ev := e.Inputs[x].Evidence
	c, ok := e.copies[x][recID{ev.TS, ev.FP}]
	return c.partition, c.offset, ok && e.Inputs[x].Has
}

// witness returns what input x's repartition topic holds of the evidence.
func (e *KeyEvidence) witness(x int, topic string) *finding.Witness {
	w := &finding.Witness{Topic: topic}
	ev := e.Inputs[x].Evidence
	if c, ok := e.copies[x][recID{ev.TS, ev.FP}]; ok {
		w.Seen, w.Partition, w.Offset = true, c.partition, c.offset
	}
	return w
}

// InputSpec names one input for the rows Keys produces.
type InputSpec struct {
	Name             string
	Topic            string
	RepartitionTopic string
	// ChangelogTopic names the changelog in count rows.
	ChangelogTopic string
	// Buffered says that a suppress buffer stands between the input's
	// table and the output: a key it holds is pending at the output
	// (BufferPending).
	Buffered bool
	// Count says that the input's table is a count and that every
	// processed candidate of the key was added (not coalesced), so its
	// changelog's count is checked (Undercount).
	Count bool
	// Table says that the input is read by a table source (builder.table,
	// KStream#toTable on the input topic): its table holds each key's last
	// record by offset, checked by TableLast from KeyEvidence.Tables.
	// NoChangelog says that the table has no changelog of its own (the
	// source-topic optimization restores it from the input topic): the
	// table stage then has nothing to check.
	Table, NoChangelog bool
	// Final, when set, says that the input is a time-windowed aggregation
	// emitted final (suppress(untilWindowCloses)): its output rule is
	// WindowFinal, per (key, window) whether or not a processed record is
	// certainly in the window, and Final places the window of key (a
	// windowed key, [key][8-byte start]) whose changelog record is at
	// partition with timestamp ts. Buffered is then set too.
	Final func(key []byte, partition int32, ts int64) FinalPlace
}

// KeySpec is what Keys needs to know of the pipeline.
type KeySpec struct {
	// Inputs are in join order: Inputs[0] is the left side.
	Inputs []InputSpec
	// Join is the type of the KTable-KTable joins of the chain: "" or
	// "left" (OutputLeftJoin), "inner" (OutputInnerJoin) or "outer"
	// (OutputOuterJoin).
	Join string
	// Cogroup says that every input feeds one cogroup's table (each
	// Changelogs[x] is what its changelog holds of the key): the output
	// is checked per input against its own view of that table, as
	// OutputOuterJoin does (a KTablePassThrough forwards every update of
	// the one store, at max timestamps). Join is then unused.
	Cogroup bool
	// NoOutput says that the tables are the pipeline's end (a topology
	// ending in its changelog): no output rule applies.
	NoOutput bool
	// Withheld reports whether rows at a stage for input x and key must be
	// withheld because a partition they depend on never settled
	// (stuck_lso). Nil withholds nothing.
	Withheld func(stage finding.Stage, x int, key []byte) bool
}

// KeyCounts is what Keys concluded for one key besides its rows.
type KeyCounts struct {
	// CheckedChangelog and CheckedOutput count the (input, key) pairs
	// checked at each stage; Withheld counts rows held back.
	CheckedChangelog, CheckedOutput int
	Withheld                        int
	// CheckedCount counts the (input, key) pairs whose count was checked.
	CheckedCount int
	// BufferPending counts the (input, key) pairs the output lacks (or
	// holds older) while the suppress buffer holds the key: pending.
	BufferPending int
	// FinalOpen and FinalExpired count the windows of an input emitted
	// final (InputSpec.Final) whose changelog holds a value and that are
	// not certainly closed (pending), or whose result the output may
	// have deleted by retention; neither is checked.
	FinalOpen, FinalExpired int
}

// Keys is the core check for one selected key: missing, stale and aborted
// updates at the changelog and output stages.
//
// Proof: timestamps propagate as maxima (a reduce result carries the
// newest timestamp of its inputs, a join result the newest of its sides),
// so a stage holding the key must hold a timestamp at least as new as the
// newest processed update of every input for it. For input x, the evidence
// is its newest candidate not pending at the second hop. Its changelog must
// hold the key at a timestamp at least the evidence's: absent is missing,
// older is stale, and newer only inside aborted transactions is aborted.
// When the left input's changelog holds the key as a value (not a
// tombstone), a join result is expected, so the output must meet the same
// bound. An update is reported at the first stage where it is missing; a
// changelog row says whether the repartition topic still holds a processed
// copy of the update (the Witness).
func Keys(spec *KeySpec, e *KeyEvidence, dst []finding.Row) ([]finding.Row, KeyCounts) {
	var kc KeyCounts
	for x := range spec.Inputs {
		if spec.Inputs[x].Table {
			e.resolveTable(x)
		}
	}
	left := e.Changelogs[0]
	for x := range e.Inputs {
		in := &e.Inputs[x]
		if !in.Has {
			if spec.Inputs[x].Final != nil && !spec.NoOutput {
				dst = e.final(spec, x, &kc, nil, dst)
			}
			continue
		}
		ev := in.Evidence
		row := finding.Row{
			Input: spec.Inputs[x].Name, Topic: spec.Inputs[x].Topic,
			Partition: ev.Partition, Offset: ev.Offset, Timestamp: ev.TS, ExpectedTS: ev.TS,
		}
		if spec.Inputs[x].Table {
			var bad bool
			if dst, bad = e.tableRow(spec, x, &kc, row, dst); bad {
				continue
			}
		} else {
			kc.CheckedChangelog++
			if kind, bad := TableMax(e.Changelogs[x], ev.TS); bad {
				if spec.Withheld != nil && spec.Withheld(finding.StageChangelog, x, e.Key) {
					kc.Withheld++
					continue
				}
				row.Kind, row.Stage = kind, finding.StageChangelog
				row.ObservedTS, row.HasObserved = e.Changelogs[x].TS, e.Changelogs[x].Has
				row.Evidence = e.witness(x, spec.Inputs[x].RepartitionTopic)
				row.Key = append([]byte(nil), e.Key...)
				dst = append(dst, row)
				continue
			}
		}
		if spec.Inputs[x].Count {
			dst = e.count(spec, x, &kc, row, dst)
		}
		if spec.NoOutput {
			continue
		}
		if spec.Inputs[x].Final != nil {
			dst = e.final(spec, x, &kc, &row, dst)
			continue
		}
		var kind finding.Kind
		var checked, bad bool
		switch {
		case spec.Cogroup:
			kind, checked, bad = OutputOuterJoin(e.Changelogs[x], e.Output, ev.TS)
		case spec.Join == "inner":
			kind, checked, bad = OutputInnerJoin(e.Changelogs, e.Output, ev.TS)
		case spec.Join == "outer":
			kind, checked, bad = OutputOuterJoin(e.Changelogs[x], e.Output, ev.TS)
		default:
			kind, checked, bad = OutputLeftJoin(left, e.Output, ev.TS)
		}
		if !checked {
			continue // no join result is expected for a key the left table lacks
		}
		kc.CheckedOutput++
		if bad && spec.Inputs[x].Buffered && BufferPending(e.Buffers[x]) {
			kc.BufferPending++
			continue
		}
		if bad {
			if spec.Withheld != nil && spec.Withheld(finding.StageOutput, x, e.Key) {
				kc.Withheld++
				continue
			}
			row.Kind, row.Stage = kind, finding.StageOutput
			row.ObservedTS, row.HasObserved = e.Output.TS, e.Output.Has
			row.Key = append([]byte(nil), e.Key...)
			dst = append(dst, row)
		}
	}
	return dst, kc
}

// final applies the output rule of a windowed aggregation emitted final
// (WindowFinal) to input x's window e.Key and appends its row, if any, to
// dst. row is the row of the window's newest processed record certainly
// in it, nil when there is none: the row then names the changelog record
// holding the window's final value (what the output owes).
func (e *KeyEvidence) final(spec *KeySpec, x int, kc *KeyCounts, row *finding.Row, dst []finding.Row) []finding.Row {
	cl := e.Changelogs[x]
	if !cl.Has || cl.Tombstone {
		return dst
	}
	place := spec.Inputs[x].Final(e.Key, cl.Partition, cl.TS)
	switch place {
	case FinalOpen:
		kc.FinalOpen++
	case FinalExpired:
		kc.FinalExpired++
	}
	kind, checked, pending, bad := WindowFinal(cl, e.Output, e.Buffers[x], place)
	if !checked {
		return dst
	}
	kc.CheckedOutput++
	if pending {
		kc.BufferPending++
		return dst
	}
	if !bad {
		return dst
	}
	if spec.Withheld != nil && spec.Withheld(finding.StageOutput, x, e.Key) {
		kc.Withheld++
		return dst
	}
	r := finding.Row{Input: spec.Inputs[x].Name, Topic: spec.Inputs[x].ChangelogTopic, Partition: cl.Partition, Offset: cl.Offset, Timestamp: cl.TS}
	if row != nil {
		r = *row
	}
	r.ExpectedTS = cl.TS
	r.Kind, r.Stage = kind, finding.StageOutput
	r.ObservedTS, r.HasObserved = e.Output.TS, e.Output.Has
	r.Key = append([]byte(nil), e.Key...)
	return append(dst, r)
}

// count applies the count rule (Undercount) to input x's changelog and
// appends its row, if any, to dst; row is the key's row for input x.
func (e *KeyEvidence) count(spec *KeySpec, x int, kc *KeyCounts, row finding.Row, dst []finding.Row) []finding.Row {
	in, st := &e.Inputs[x], e.Changelogs[x]
	processed := in.Processed()
	_, checked, bad := Undercount(st, processed)
	if !checked {
		return dst
	}
	kc.CheckedCount++
	if !bad {
		return dst
	}
	if spec.Withheld != nil && spec.Withheld(finding.StageChangelog, x, e.Key) {
		kc.Withheld++
		return dst
	}
	row.Kind, row.Stage = finding.Undercount, finding.StageCount
	row.ObservedTS, row.HasObserved = st.TS, true
	row.Evidence = &finding.CountEvidence{Changelog: spec.Inputs[x].ChangelogTopic, Partition: st.Partition, Offset: st.Offset,
		Count: st.Count, Processed: processed}
	row.Key = append([]byte(nil), e.Key...)
	return append(dst, row)
}

// resolveTable sets the input state and the table state of table-source
// input x from its records (Tables[x]): the evidence is the key's last
// processed record by offset, and the table holds the key as that record
// does (a value or a tombstone) as far as the output rules go: a join or
// toStream forwarded a result for that update at a timestamp at least its
// own (KTableKTable*Join#resultTimestamp, TimestampedCacheFlushListener).
// A key with no such record, or whose records lie in several partitions,
// is not checked.
func (e *KeyEvidence) resolveTable(x int) {
	e.Inputs[x] = InputState{}
	e.Changelogs[x] = StageState{}
	last, ok := e.Tables[x].Evidence()
	if !ok {
		return
	}
	e.Inputs[x] = InputState{Has: true, Candidates: 1, Evidence: InputRecord{TS: last.TS, Partition: last.Partition, Offset: last.Offset}}
	e.Changelogs[x] = StageState{Has: true, TS: last.TS, Tombstone: last.Tombstone, Partition: last.Partition}
}

// tableRow applies the table rule (TableLast) to table-source input x and
// appends its row, if any, to dst; bad says the key's update was lost at
// the table (reported or withheld), so the output is not judged for it.
func (e *KeyEvidence) tableRow(spec *KeySpec, x int, kc *KeyCounts, row finding.Row, dst []finding.Row) ([]finding.Row, bool) {
	if spec.Inputs[x].NoChangelog {
		return dst, false
	}
	t := &e.Tables[x]
	last, _ := t.Evidence()
	cl, has := t.Changelog[last.Partition]
	kc.CheckedChangelog++
	kind, bad, witness := TableLast(last, t.Records[last.Partition], cl, has)
	if !bad {
		return dst, false
	}
	if spec.Withheld != nil && spec.Withheld(finding.StageChangelog, x, e.Key) {
		kc.Withheld++
		return dst, true
	}
	row.Kind, row.Stage = kind, finding.StageChangelog
	row.ObservedTS, row.HasObserved = cl.TS, has
	row.Evidence = &finding.TableEvidence{Changelog: spec.Inputs[x].ChangelogTopic, Partition: last.Partition, Has: has,
		Offset: cl.Offset, TS: cl.TS, Tombstone: cl.Tombstone, InputOffset: witness.Offset}
	row.Key = append([]byte(nil), e.Key...)
	return append(dst, row), true
}
