package detect

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

type ledgerFact func(e *LedgerEvidence, spec *LedgerSpec)

func topicCopy(p int32, off int64) ledgerFact {
	return func(e *LedgerEvidence, _ *LedgerSpec) {
		e.AddCopy(Record{Partition: p, Offset: off, TS: 1000 + off, Key: []byte("k")})
	}
}
func acked(line int64, p int32, off int64) ledgerFact {
	return func(e *LedgerEvidence, spec *LedgerSpec) {
		e.AddLine(spec, LedgerLine{Line: line, TS: 50, Key: []byte("k"), Acked: true, Partition: p, Offset: off})
	}
}
func failed(line int64) ledgerFact {
	return func(e *LedgerEvidence, spec *LedgerSpec) {
		e.AddLine(spec, LedgerLine{Line: line, TS: 60, Key: []byte("k")})
	}
}

func ledgerRowText(r finding.Row) string {
	s := fmt.Sprintf("%s %s %s %s[%d]@%d", r.Kind, r.Stage, r.Input, r.Topic, r.Partition, r.Offset)
	if e := r.Ledger; e != nil {
		s += fmt.Sprintf(" line=%d acked=%v sends=%d copies=%d", e.Line, e.Acked, e.Sends, e.Copies)
		if r.Kind == finding.AckedMissing {
			s += fmt.Sprintf(" log=%d..%d elsewhere=%d", e.LogStart, e.LogEnd, e.Elsewhere)
		}
		if len(e.At) > 0 {
			s += " at=" + coordsText(e.At)
		}
	}
	return s
}

func TestLedger(t *testing.T) {
	spec := &LedgerSpec{Input: "orders", Topic: "orders", Partitions: map[int32]Bounds{
		0: {LogStart: 10, LSO: 100, HighWatermark: 100},
		1: {LogStart: 0, LSO: 40, HighWatermark: 45}, // an open transaction from 40
	}}
	tests := []struct {
		name  string
		facts []ledgerFact
		want  []string
		// verified, expired, unsettled
		counts [3]int64
	}{
		{
			name:   "acknowledged and at its offset: verified",
			facts:  []ledgerFact{topicCopy(0, 20), acked(1, 0, 20)},
			counts: [3]int64{1, 0, 0},
		},
		{
			name:  "acknowledged past the log end (truncated): acked_missing",
			facts: []ledgerFact{acked(3, 0, 120)},
			want:  []string{"acked_missing ledger orders orders[0]@120 line=3 acked=true sends=1 copies=0 log=10..100 elsewhere=0"},
		},
		{
			name:  "acknowledged at an offset holding another record: acked_missing",
			facts: []ledgerFact{topicCopy(0, 30), acked(3, 0, 31)},
			want:  []string{"acked_missing ledger orders orders[0]@31 line=3 acked=true sends=1 copies=1 log=10..100 elsewhere=1 at=[0]@30"},
		},
		{
			name:   "acknowledged below the log start: expired, not lost",
			facts:  []ledgerFact{acked(2, 0, 5)},
			counts: [3]int64{0, 1, 0},
		},
		{
			name:   "acknowledged inside a transaction open at the snapshot: unsettled",
			facts:  []ledgerFact{acked(2, 1, 42)},
			counts: [3]int64{0, 0, 1},
		},
		{
			name:  "failed send that is in the topic: unacked_present at the copy",
			facts: []ledgerFact{topicCopy(1, 7), failed(9)},
			want:  []string{"unacked_present ledger orders orders[1]@7 line=9 acked=false sends=1 copies=1 at=[1]@7"},
		},
		{
			name:  "failed send that is not in the topic: unacked_missing",
			facts: []ledgerFact{failed(9)},
			want:  []string{"unacked_missing ledger orders orders[-1]@-1 line=9 acked=false sends=1 copies=0"},
		},
		{
			name:   "a copy an acknowledged line claims is not a failed send's copy",
			facts:  []ledgerFact{topicCopy(0, 20), acked(1, 0, 20), failed(2)},
			want:   []string{"unacked_missing ledger orders orders[-1]@-1 line=2 acked=false sends=2 copies=1"},
			counts: [3]int64{1, 0, 0},
		},
		{
			name:  "two failed sends, one copy: the first line is present, the second missing",
			facts: []ledgerFact{topicCopy(0, 50), failed(4), failed(8)},
			want: []string{
				"unacked_present ledger orders orders[0]@50 line=4 acked=false sends=2 copies=1 at=[0]@50",
				"unacked_missing ledger orders orders[-1]@-1 line=8 acked=false sends=2 copies=1",
			},
		},
		{
			name:   "duplicated: one acknowledged send, three copies",
			facts:  []ledgerFact{topicCopy(0, 20), acked(1, 0, 20), topicCopy(0, 21), topicCopy(1, 3)},
			want:   []string{"duplicated ledger orders orders[0]@21 line=1 acked=false sends=1 copies=3 at=[0]@21,[1]@3"},
			counts: [3]int64{1, 0, 0},
		},
		{
			name:   "the same offset claimed twice: the second claim is not verified",
			facts:  []ledgerFact{topicCopy(0, 20), acked(1, 0, 20), acked(5, 0, 20)},
			want:   []string{"acked_missing ledger orders orders[0]@20 line=5 acked=true sends=2 copies=1 log=10..100 elsewhere=0"},
			counts: [3]int64{1, 0, 0},
		},
		{
			name:  "copies of records the ledger never sent are not its business",
			facts: []ledgerFact{topicCopy(0, 20), topicCopy(0, 22)},
		},
	}
	var e LedgerEvidence
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.Reset()
			for _, f := range tt.facts {
				f(&e, spec)
			}
			rows, c := Ledger(spec, &e, nil)
			var got []string
			for _, r := range rows {
				got = append(got, ledgerRowText(r))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("rows:\n got %q\nwant %q", got, tt.want)
			}
			if gc := [3]int64{c.Verified, c.Expired, c.Unsettled}; gc != tt.counts {
				t.Errorf("verified, expired, unsettled = %v, want %v", gc, tt.counts)
			}
		})
	}
}

func TestLedgerKeepsCopyKeysPastTheCallback(t *testing.T) {
	spec := &LedgerSpec{Topic: "t", Partitions: map[int32]Bounds{0: {LSO: 10, HighWatermark: 10}}}
	var e LedgerEvidence
	buf := []byte("first")
	e.AddCopy(Record{Partition: 0, Offset: 1, Key: buf})
	copy(buf, "XXXXX") // the index reuses its buffers
	e.AddCopy(Record{Partition: 0, Offset: 2, Key: []byte("second")})
	e.AddLine(spec, LedgerLine{Line: 1, Acked: true, Partition: 0, Offset: 2})
	rows, _ := Ledger(spec, &e, nil)
	if len(rows) != 1 || rows[0].Kind != finding.Duplicated || string(rows[0].Key) != "first" || rows[0].Offset != 1 {
		t.Errorf("rows %+v, want one duplicated row naming the unclaimed copy at 1 with key first", rows)
	}
}
