package streams

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
)

// known is what the steps of a reconciliation learnt about one selected
// key and keep between steps (one value per key in the state store): per
// input the newest processed update (the evidence, with its repartition
// copy) and the updates still pending at the second hop; per changelog and
// for the output the newest committed and aborted timestamps; and the
// findings open on the key. These are maxima and short lists, so they do
// not grow with the records read.
type known struct {
	inputs     []knownInput
	changelogs []detect.StageState
	output     detect.StageState
	open       []openFinding
	// buffers are, per input, the last record of the key in its suppress
	// buffer's changelog (zero for an input without one).
	buffers []detect.BufferState
	// tables are, per input read by a table source (Input.Table), the
	// key's last committed record by offset in each partition of the
	// table's changelog (nil for other inputs): a step reads the table's
	// input whole, but its changelog only from where the last step stopped.
	tables [][]detect.TableRecord
}

// knownInput is what is known of one input for the key.
type knownInput struct {
	has bool
	ev  detect.InputRecord
	// copied says the repartition topic held a processed copy of the
	// evidence at copyPartition/copyOffset when it became the evidence.
	copied        bool
	copyPartition int32
	copyOffset    int64
	// pending are the candidates whose copy was in the repartition tail.
	pending []detect.InputRecord
	// processed counts the key's processed candidates of the input that
	// the steps so far read (detect.InputState.Processed), when
	// hasProcessed: states written before it was kept lack it.
	hasProcessed bool
	processed    int64
}

// openFinding is a finding on the key that the last step reported (or
// withheld), and when it was first reported.
type openFinding struct {
	x         int
	row       finding.Row
	firstSeen int64 // Unix ms
	// withheld: a partition the finding depends on had a hanging
	// transaction at the last step, which neither reported nor resolved it.
	withheld bool
	// looked: a windowed reconciliation read the stage's partition before
	// the window start for the key; hasBefore/beforeTS is what it found.
	looked, hasBefore bool
	beforeTS          int64
}

// knownCodec is the Kafka Streams mode's per-key state codec
// (incremental.Codec) for a pipeline whose inputs are ins (join order).
type knownCodec struct{ ins []Input }

func (c knownCodec) Encode(k *known, b []byte) []byte { return k.encode(b, c.ins) }
func (c knownCodec) Decode(b []byte, k *known) error  { return k.decode(b, c.ins) }
func (c knownCodec) Empty(k *known) bool              { return k.empty() }

// empty reports whether nothing is known of the key.
func (k *known) empty() bool {
	for _, in := range k.inputs {
		if in.has || len(in.pending) > 0 {
			return false
		}
	}
	for _, s := range k.changelogs {
		if s.Has || s.HasAborted {
			return false
		}
	}
	for _, b := range k.buffers {
		if b.Has {
			return false
		}
	}
	for _, t := range k.tables {
		if len(t) > 0 {
			return false
		}
	}
	return !k.output.Has && !k.output.HasAborted && len(k.open) == 0
}

// reset makes k a key of n inputs that nothing is known of.
func (k *known) reset(n int) {
	if cap(k.inputs) < n {
		k.inputs, k.changelogs, k.buffers = make([]knownInput, n), make([]detect.StageState, n), make([]detect.BufferState, n)
	}
	k.inputs, k.changelogs, k.buffers = k.inputs[:n], k.changelogs[:n], k.buffers[:n]
	clear(k.buffers)
	if cap(k.tables) < n {
		k.tables = make([][]detect.TableRecord, n)
	}
	k.tables = k.tables[:n]
	for i := range k.tables {
		k.tables[i] = k.tables[i][:0]
	}
	for i := range k.inputs {
		k.inputs[i] = knownInput{pending: k.inputs[i].pending[:0]}
	}
	clear(k.changelogs)
	k.output = detect.StageState{}
	k.open = k.open[:0]
}

// The encoding of known, version 1: a version byte, the number of inputs,
// then per input its flags and fields, per stage (changelogs, then the
// output) its flags and fields, then the open findings, then, for each
// input with a suppress buffer (Input.BufferTopic) and only for those, its
// buffer state's flags and fields (so the states of pipelines without a
// buffer are encoded as before), then, for each input read by a table
// source (Input.Table) and only for those, the number of its changelog
// records and each one's partition, offset, timestamp and tombstone flag. Integers are varints; fingerprints fixed
// 8 bytes.
const knownVersion = 1

const (
	inHas = 1 << iota
	inCopied
	inProcessed // since the recount in steps: processed follows
)

const (
	stHas = 1 << iota
	stTombstone
	stAborted
	stCount // since the recount in steps: the newest record's count follows
)

const (
	ofWithheld = 1 << iota
	ofLooked
	ofHasBefore
	ofHasObserved
	ofWitness
	ofWitnessSeen
	ofCount // an undercount's CountEvidence follows
)

// kindCodes and stageCodes are the codes of an open finding's kind and
// stage: append only (undercounts came with the recount in steps).
var (
	kindCodes  = []finding.Kind{finding.Missing, finding.Stale, finding.Aborted, finding.Undercount}
	stageCodes = []finding.Stage{finding.StageChangelog, finding.StageOutput, finding.StageCount}
)

func kindCode(k finding.Kind) byte {
	for i, c := range kindCodes {
		if c == k {
			return byte(i)
		}
	}
	return 0xff
}

// encode appends k's encoding to b, for a pipeline whose inputs are ins.
func (k *known) encode(b []byte, ins []Input) []byte {
	b = append(b, knownVersion, byte(len(k.inputs)))
	for _, in := range k.inputs {
		var f byte
		if in.has {
			f |= inHas
		}
		if in.copied {
			f |= inCopied
		}
		if in.hasProcessed {
			f |= inProcessed
		}
		b = append(b, f)
		if in.has {
			b = appendRecord(b, in.ev)
		}
		if in.copied {
			b = binary.AppendUvarint(b, uint64(in.copyPartition))
			b = binary.AppendVarint(b, in.copyOffset)
		}
		if in.hasProcessed {
			b = binary.AppendVarint(b, in.processed)
		}
		b = binary.AppendUvarint(b, uint64(len(in.pending)))
		for _, r := range in.pending {
			b = appendRecord(b, r)
		}
	}
	for i := 0; i <= len(k.changelogs); i++ {
		s := k.output
		if i < len(k.changelogs) {
			s = k.changelogs[i]
		}
		var f byte
		if s.Has {
			f |= stHas
		}
		if s.Tombstone {
			f |= stTombstone
		}
		if s.HasAborted {
			f |= stAborted
		}
		if s.Has && s.HasCount {
			f |= stCount
		}
		b = append(b, f)
		if s.Has || s.HasAborted {
			b = binary.AppendUvarint(b, uint64(s.Partition))
		}
		if s.Has {
			b = binary.AppendVarint(b, s.TS)
			b = binary.AppendVarint(b, s.Offset)
		}
		if s.HasAborted {
			b = binary.AppendVarint(b, s.AbortedTS)
		}
		if s.Has && s.HasCount {
			b = binary.AppendVarint(b, s.Count)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(k.open)))
	for _, o := range k.open {
		r := &o.row
		stage := byte(slices.Index(stageCodes, r.Stage))
		var f byte
		if o.withheld {
			f |= ofWithheld
		}
		if o.looked {
			f |= ofLooked
		}
		if o.hasBefore {
			f |= ofHasBefore
		}
		if r.HasObserved {
			f |= ofHasObserved
		}
		w, _ := r.Evidence.(*finding.Witness)
		if w != nil {
			f |= ofWitness
			if w.Seen {
				f |= ofWitnessSeen
			}
		}
		ce, _ := r.Evidence.(*finding.CountEvidence)
		if ce != nil {
			f |= ofCount
		}
		b = append(b, byte(o.x), stage, kindCode(r.Kind), f)
		b = binary.AppendVarint(b, o.firstSeen)
		b = binary.AppendUvarint(b, uint64(r.Partition))
		b = binary.AppendVarint(b, r.Offset)
		b = binary.AppendVarint(b, r.Timestamp)
		b = binary.AppendVarint(b, r.ExpectedTS)
		if r.HasObserved {
			b = binary.AppendVarint(b, r.ObservedTS)
		}
		if w != nil && w.Seen {
			b = binary.AppendUvarint(b, uint64(w.Partition))
			b = binary.AppendVarint(b, w.Offset)
		}
		if o.hasBefore {
			b = binary.AppendVarint(b, o.beforeTS)
		}
		if ce != nil {
			b = binary.AppendUvarint(b, uint64(ce.Partition))
			b = binary.AppendVarint(b, ce.Offset)
			b = binary.AppendVarint(b, ce.Count)
			b = binary.AppendVarint(b, ce.Processed)
		}
	}
	for x, in := range ins {
		if in.BufferTopic == "" {
			continue
		}
		s := k.buffers[x]
		var f byte
		if s.Has {
			f |= stHas
		}
		if s.Tombstone {
			f |= stTombstone
		}
		b = append(b, f)
		if s.Has {
			b = binary.AppendUvarint(b, uint64(s.Partition))
			b = binary.AppendVarint(b, s.Offset)
		}
	}
	for x, in := range ins {
		if !in.Table {
			continue
		}
		var t []detect.TableRecord
		if x < len(k.tables) {
			t = k.tables[x]
		}
		b = binary.AppendUvarint(b, uint64(len(t)))
		for _, r := range t {
			b = binary.AppendUvarint(b, uint64(r.Partition))
			b = binary.AppendVarint(b, r.Offset)
			b = binary.AppendVarint(b, r.TS)
			var f byte
			if r.Tombstone {
				f = stTombstone
			}
			b = append(b, f)
		}
	}
	return b
}

func appendRecord(b []byte, r detect.InputRecord) []byte {
	b = binary.AppendVarint(b, r.TS)
	b = binary.AppendUvarint(b, uint64(r.Partition))
	b = binary.AppendVarint(b, r.Offset)
	return binary.BigEndian.AppendUint64(b, r.FP)
}

var errShortState = errors.New("truncated value")

// decoder reads the encoding of known.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.err = errShortState
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// varint reads a zig-zag varint (binary.AppendVarint).
func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShortState
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) u64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.err = errShortState
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) record() detect.InputRecord {
	return detect.InputRecord{TS: d.varint(), Partition: int32(d.uvarint()), Offset: d.varint(), FP: d.u64()}
}

// decode reads b into k (reset first) for a pipeline whose inputs are
// named by ins (join order).
func (k *known) decode(b []byte, ins []Input) error {
	d := &decoder{b: b}
	if v := d.byte(); d.err == nil && v != knownVersion {
		return fmt.Errorf("state value of version %d, this lossaudit reads %d", v, knownVersion)
	}
	n := int(d.byte())
	if d.err == nil && n != len(ins) {
		return fmt.Errorf("state value for %d inputs, the pipeline has %d", n, len(ins))
	}
	k.reset(len(ins))
	for x := range k.inputs {
		in := &k.inputs[x]
		f := d.byte()
		in.has, in.copied, in.hasProcessed = f&inHas != 0, f&inCopied != 0, f&inProcessed != 0
		if in.has {
			in.ev = d.record()
		}
		if in.copied {
			in.copyPartition, in.copyOffset = int32(d.uvarint()), d.varint()
		}
		if in.hasProcessed {
			in.processed = d.varint()
		}
		np := d.uvarint()
		if np > uint64(len(d.b)) {
			return errShortState
		}
		for range np {
			in.pending = append(in.pending, d.record())
		}
	}
	for i := 0; i <= len(k.changelogs); i++ {
		var s detect.StageState
		f := d.byte()
		s.Has, s.Tombstone, s.HasAborted = f&stHas != 0, f&stTombstone != 0, f&stAborted != 0
		if s.Has || s.HasAborted {
			s.Partition = int32(d.uvarint())
		}
		if s.Has {
			s.TS, s.Offset = d.varint(), d.varint()
		}
		if s.HasAborted {
			s.AbortedTS = d.varint()
		}
		if s.Has && f&stCount != 0 {
			s.HasCount, s.Count = true, d.varint()
		}
		if i < len(k.changelogs) {
			k.changelogs[i] = s
		} else {
			k.output = s
		}
	}
	no := d.uvarint()
	if no > uint64(len(d.b)) {
		return errShortState
	}
	for range no {
		var o openFinding
		o.x = int(d.byte())
		stage, kind, f := d.byte(), d.byte(), d.byte()
		if d.err != nil {
			break
		}
		if o.x >= len(ins) || int(stage) >= len(stageCodes) || int(kind) >= len(kindCodes) {
			return fmt.Errorf("state value with a finding of input %d, stage %d, kind %d", o.x, stage, kind)
		}
		o.withheld, o.looked, o.hasBefore = f&ofWithheld != 0, f&ofLooked != 0, f&ofHasBefore != 0
		o.firstSeen = d.varint()
		r := &o.row
		r.Kind, r.Stage = kindCodes[kind], stageCodes[stage]
		r.Input, r.Topic = ins[o.x].Name, ins[o.x].Topic
		r.Partition, r.Offset, r.Timestamp, r.ExpectedTS = int32(d.uvarint()), d.varint(), d.varint(), d.varint()
		if f&ofHasObserved != 0 {
			r.HasObserved, r.ObservedTS = true, d.varint()
		}
		if f&ofWitness != 0 {
			w := &finding.Witness{Topic: ins[o.x].RepartitionTopic}
			if f&ofWitnessSeen != 0 {
				w.Seen, w.Partition, w.Offset = true, int32(d.uvarint()), d.varint()
			}
			r.Evidence = w
		}
		if o.hasBefore {
			o.beforeTS = d.varint()
		}
		if f&ofCount != 0 {
			r.Evidence = &finding.CountEvidence{Changelog: ins[o.x].ChangelogTopic, Partition: int32(d.uvarint()), Offset: d.varint(),
				Count: d.varint(), Processed: d.varint()}
		}
		k.open = append(k.open, o)
	}
	for x, in := range ins {
		if in.BufferTopic == "" {
			continue
		}
		s := &k.buffers[x]
		f := d.byte()
		s.Has, s.Tombstone = f&stHas != 0, f&stTombstone != 0
		if s.Has {
			s.Partition, s.Offset = int32(d.uvarint()), d.varint()
		}
	}
	for x, in := range ins {
		if !in.Table {
			continue
		}
		nt := d.uvarint()
		if nt > uint64(len(d.b)) {
			return errShortState
		}
		for range nt {
			r := detect.TableRecord{Partition: int32(d.uvarint()), Offset: d.varint(), TS: d.varint()}
			r.Tombstone = d.byte()&stTombstone != 0
			k.tables[x] = append(k.tables[x], r)
		}
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("state value with %d bytes left over", len(d.b))
	}
	return nil
}
