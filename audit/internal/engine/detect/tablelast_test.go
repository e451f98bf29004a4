package detect

import (
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestTableLast(t *testing.T) {
	val := func(off, ts int64) TableRecord { return TableRecord{Partition: 1, Offset: off, TS: ts} }
	tomb := func(off, ts int64) TableRecord {
		return TableRecord{Partition: 1, Offset: off, TS: ts, Tombstone: true}
	}
	last := val(10, 500)
	cases := []struct {
		name    string
		last    TableRecord
		records []TableRecord // besides last
		cl      TableRecord
		has     bool
		kind    finding.Kind
		bad     bool
		witness int64
	}{
		{name: "the last record", last: last, cl: val(7, 500), has: true},
		{name: "out of order: older than an earlier update, still the last", last: val(10, 100), records: []TableRecord{val(4, 900)}, cl: val(3, 100), has: true},
		{name: "an earlier, newer update: lost", last: val(10, 100), records: []TableRecord{val(4, 900)}, cl: val(3, 900), has: true, kind: finding.Stale, bad: true, witness: 4},
		{name: "the newest earlier match is the witness", last: val(10, 100), records: []TableRecord{val(2, 900), val(6, 900)}, cl: val(3, 900), has: true, kind: finding.Stale, bad: true, witness: 6},
		{name: "a later record processed since", last: last, records: []TableRecord{val(11, 50)}, cl: val(8, 50), has: true},
		{name: "a later tombstone processed since", last: last, records: []TableRecord{tomb(11, 600)}, cl: tomb(8, 600), has: true},
		{name: "a later tombstone compacted away", last: last, records: []TableRecord{tomb(11, 600)}},
		{name: "an earlier tombstone, then last lost", last: last, records: []TableRecord{tomb(9, 600)}, cl: tomb(8, 600), has: true, kind: finding.Stale, bad: true, witness: 9},
		{name: "absent", last: last, kind: finding.Missing, bad: true},
		{name: "a tombstone last, absent", last: tomb(10, 500)},
		{name: "a tombstone last, its tombstone", last: tomb(10, 500), cl: tomb(9, 500), has: true},
		{name: "a tombstone last, the earlier value kept", last: tomb(10, 500), records: []TableRecord{val(3, 500)}, cl: val(9, 500), has: true, kind: finding.Stale, bad: true, witness: 3},
		{name: "a value last, a tombstone at its timestamp, no witness", last: last, cl: tomb(9, 500), has: true},
		{name: "matching no input record: other timestamps, not judged", last: last, records: []TableRecord{val(4, 300)}, cl: val(9, 900), has: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kind, bad, w := TableLast(tc.last, append(tc.records, tc.last), tc.cl, tc.has)
			if kind != tc.kind || bad != tc.bad || (bad && tc.has && w.Offset != tc.witness) {
				t.Errorf("TableLast = %q, %v, witness %+v; want %q, %v, witness at %d", kind, bad, w, tc.kind, tc.bad, tc.witness)
			}
		})
	}
}

func TestTableInputEvidence(t *testing.T) {
	var ti TableInput
	if _, ok := ti.Evidence(); ok {
		t.Fatal("evidence without records")
	}
	ti.AddLast(TableRecord{Partition: 2, Offset: 5, TS: 9})
	ti.AddLast(TableRecord{Partition: 2, Offset: 3, TS: 99})
	if r, ok := ti.Evidence(); !ok || r.Offset != 5 || r.TS != 9 {
		t.Fatalf("evidence %+v %v, want the last by offset (5), not the newest timestamp", r, ok)
	}
	ti.AddRecord(TableRecord{Partition: 0, Offset: 1})
	if _, ok := ti.Evidence(); ok {
		t.Fatal("a key in two partitions has no one last record")
	}
	ti.reset()
	ti.AddLast(TableRecord{Partition: 0, Offset: 1})
	ti.AddLast(TableRecord{Partition: 1, Offset: 1})
	if _, ok := ti.Evidence(); ok {
		t.Fatal("a key in two partitions has no one last record")
	}
}

// TestKeysTable: a table-source input is judged by the last record by
// offset at the table, and the output of its join by that record's
// timestamp.
func TestKeysTable(t *testing.T) {
	spec := &KeySpec{Join: "left", Inputs: []InputSpec{
		{Name: "t", Topic: "profiles", ChangelogTopic: "app-s-changelog", Table: true},
		{Name: "r", Topic: "clicks", RepartitionTopic: "app-r-repartition"},
	}}
	cases := []struct {
		name    string
		build   func(e *KeyEvidence)
		noCL    bool
		want    []finding.Stage
		wantOut int
	}{
		{name: "out of order, clean", build: func(e *KeyEvidence) {
			e.Tables[0].AddLast(TableRecord{Partition: 0, Offset: 1, TS: 100})
			e.Tables[0].AddChangelog(TableRecord{Partition: 0, Offset: 0, TS: 900})
			e.Tables[0].AddChangelog(TableRecord{Partition: 0, Offset: 4, TS: 100})
			e.AddOutput(0, 900, 0, false)
		}, wantOut: 1},
		{name: "last update lost at the table", build: func(e *KeyEvidence) {
			e.Tables[0].AddRecord(TableRecord{Partition: 0, Offset: 0, TS: 900})
			e.Tables[0].AddLast(TableRecord{Partition: 0, Offset: 1, TS: 100})
			e.Tables[0].AddChangelog(TableRecord{Partition: 0, Offset: 0, TS: 900})
			e.AddOutput(0, 900, 0, false)
		}, want: []finding.Stage{finding.StageChangelog}},
		{name: "source-topic changelog: the output only", noCL: true, build: func(e *KeyEvidence) {
			e.Tables[0].AddLast(TableRecord{Partition: 0, Offset: 1, TS: 100})
		}, want: []finding.Stage{finding.StageOutput}, wantOut: 1},
		{name: "right side newer than the table's last", build: func(e *KeyEvidence) {
			e.Tables[0].AddLast(TableRecord{Partition: 0, Offset: 1, TS: 100})
			e.Tables[0].AddChangelog(TableRecord{Partition: 0, Offset: 4, TS: 100})
			e.AddCandidate(1, InputRecord{TS: 300, Partition: 2, Offset: 8})
			e.AddChangelog(1, 2, 300, 3, false)
			e.AddOutput(0, 200, 0, false)
		}, want: []finding.Stage{finding.StageOutput}, wantOut: 2},
		{name: "a deleted key owes no join result", build: func(e *KeyEvidence) {
			e.Tables[0].AddLast(TableRecord{Partition: 0, Offset: 1, TS: 100, Tombstone: true})
			e.AddCandidate(1, InputRecord{TS: 300, Partition: 2, Offset: 8})
			e.AddChangelog(1, 2, 300, 3, false)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := *spec
			s.Inputs = append([]InputSpec(nil), spec.Inputs...)
			s.Inputs[0].NoChangelog = tc.noCL
			e := NewKeyEvidence(2)
			e.Reset([]byte("k"))
			tc.build(e)
			rows, kc := Keys(&s, e, nil)
			var got []finding.Stage
			for _, r := range rows {
				got = append(got, r.Stage)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) || kc.CheckedOutput != tc.wantOut {
				t.Fatalf("rows %+v, output checked %d; want stages %v, output checked %d", rows, kc.CheckedOutput, tc.want, tc.wantOut)
			}
			if len(rows) > 0 && rows[0].Stage == finding.StageChangelog {
				if ev, _ := rows[0].Evidence.(*finding.TableEvidence); ev == nil || !ev.Has || ev.Offset != 0 || ev.InputOffset != 0 || rows[0].Offset != 1 {
					t.Errorf("row %+v, evidence %+v: want the input's last record (offset 1) and the changelog's last (offset 0)", rows[0], rows[0].Evidence)
				}
			}
		})
	}
}
