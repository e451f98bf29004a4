package detect

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

var threeInputs = &KeySpec{Inputs: []InputSpec{
	{Name: "a", Topic: "topicA", RepartitionTopic: "app-ra-repartition"}, {Name: "b", Topic: "topicB", RepartitionTopic: "app-rb-repartition"},
	{Name: "c", Topic: "topicC", RepartitionTopic: "app-rc-repartition"},
}}

// fact is one thing known about the key, applied to a KeyEvidence.
type fact func(e *KeyEvidence)

func cand(x int, ts int64, p int32, off int64, fp uint64) fact {
	return func(e *KeyEvidence) { e.AddCandidate(x, InputRecord{TS: ts, Partition: p, Offset: off, FP: fp}) }
}
func tail(x int, ts int64, fp uint64) fact { return func(e *KeyEvidence) { e.AddTail(x, ts, fp) } }
func copyOf(x int, ts int64, fp uint64, p int32, off int64) fact {
	return func(e *KeyEvidence) { e.AddCopy(x, ts, fp, p, off) }
}
func cl(x int, ts, off int64) fact {
	return func(e *KeyEvidence) { e.AddChangelog(x, 0, ts, off, false) }
}
func clTomb(x int, ts, off int64) fact {
	return func(e *KeyEvidence) { e.AddChangelog(x, 0, ts, off, true) }
}
func clAborted(x int, ts int64) fact { return func(e *KeyEvidence) { e.AddChangelogAborted(x, 0, ts) } }
func out(ts, off int64) fact         { return func(e *KeyEvidence) { e.AddOutput(0, ts, off, false) } }
func outAborted(ts int64) fact       { return func(e *KeyEvidence) { e.AddOutputAborted(0, ts) } }

func rowText(r finding.Row) string {
	obs := "-"
	if r.HasObserved {
		obs = fmt.Sprint(r.ObservedTS)
	}
	s := fmt.Sprintf("%s %s %s %s[%d]@%d ts=%d exp=%d obs=%s", r.Kind, r.Stage, r.Input, r.Topic, r.Partition, r.Offset, r.Timestamp, r.ExpectedTS, obs)
	if w, _ := r.Evidence.(*finding.Witness); w != nil {
		if w.Seen {
			s += fmt.Sprintf(" seen %s[%d]@%d", w.Topic, w.Partition, w.Offset)
		} else {
			s += " unseen " + w.Topic
		}
	}
	return s
}

func TestKeys(t *testing.T) {
	tests := []struct {
		name  string
		facts []fact
		want  []string
		// checked at the changelog and output stages
		checkedCL, checkedOut int
	}{
		{
			name:      "clean: every stage caught up",
			facts:     []fact{cand(0, 100, 0, 5, 1), cand(1, 90, 1, 3, 2), cl(0, 100, 1), cl(1, 90, 1), out(100, 1)},
			checkedCL: 2, checkedOut: 2,
		},
		{
			name:      "stage ahead of the input (newer updates outside the window) is fine",
			facts:     []fact{cand(0, 100, 0, 5, 1), cl(0, 500, 1), out(600, 1)},
			checkedCL: 1, checkedOut: 1,
		},
		{
			name:      "equal timestamps pass",
			facts:     []fact{cand(0, 100, 0, 5, 1), cand(1, 100, 0, 6, 1), cl(0, 100, 1), cl(1, 100, 2), out(100, 3)},
			checkedCL: 2, checkedOut: 2,
		},
		{
			name:      "changelog missing, repartition copy gone",
			facts:     []fact{cand(0, 100, 0, 5, 1)},
			want:      []string{"missing changelog a topicA[0]@5 ts=100 exp=100 obs=- unseen app-ra-repartition"},
			checkedCL: 1,
		},
		{
			name:      "changelog missing, the processed repartition copy is the witness (first copy by partition, offset)",
			facts:     []fact{copyOf(0, 100, 1, 2, 40), copyOf(0, 100, 1, 1, 90), copyOf(0, 100, 1, 1, 50), copyOf(0, 99, 1, 0, 1), cand(0, 100, 0, 5, 1)},
			want:      []string{"missing changelog a topicA[0]@5 ts=100 exp=100 obs=- seen app-ra-repartition[1]@50"},
			checkedCL: 1,
		},
		{
			name:      "changelog stale",
			facts:     []fact{cand(0, 100, 0, 5, 1), cl(0, 80, 3), cl(0, 70, 9), out(80, 1)},
			want:      []string{"stale changelog a topicA[0]@5 ts=100 exp=100 obs=80 unseen app-ra-repartition"},
			checkedCL: 1,
		},
		{
			name:      "changelog update only in an aborted transaction",
			facts:     []fact{cand(0, 100, 0, 5, 1), cl(0, 80, 1), clAborted(0, 100), out(80, 1)},
			want:      []string{"aborted changelog a topicA[0]@5 ts=100 exp=100 obs=80 unseen app-ra-repartition"},
			checkedCL: 1,
		},
		{
			name:      "older aborted update does not make a missing key aborted",
			facts:     []fact{cand(0, 100, 0, 5, 1), clAborted(0, 99)},
			want:      []string{"missing changelog a topicA[0]@5 ts=100 exp=100 obs=- unseen app-ra-repartition"},
			checkedCL: 1,
		},
		{
			name:      "output missing for a left-table key",
			facts:     []fact{cand(0, 100, 0, 5, 1), cl(0, 100, 1)},
			want:      []string{"missing output a topicA[0]@5 ts=100 exp=100 obs=-"},
			checkedCL: 1, checkedOut: 1,
		},
		{
			name:      "output stale behind a right-side update",
			facts:     []fact{cand(0, 100, 0, 5, 1), cand(2, 300, 2, 9, 1), cl(0, 100, 1), cl(2, 300, 1), out(100, 1)},
			want:      []string{"stale output c topicC[2]@9 ts=300 exp=300 obs=100"},
			checkedCL: 2, checkedOut: 2,
		},
		{
			name:      "output update only in an aborted transaction",
			facts:     []fact{cand(0, 100, 0, 5, 1), cl(0, 100, 1), out(50, 1), outAborted(100)},
			want:      []string{"aborted output a topicA[0]@5 ts=100 exp=100 obs=50"},
			checkedCL: 1, checkedOut: 1,
		},
		{
			name:      "right-only key: no output expected",
			facts:     []fact{cand(1, 100, 0, 5, 1), cl(1, 100, 1)},
			checkedCL: 1,
		},
		{
			name:      "left table tombstone: no output expected",
			facts:     []fact{cand(0, 100, 0, 5, 1), clTomb(0, 100, 4), cl(0, 100, 3)},
			checkedCL: 1,
		},
		{
			name:  "one row per input at its first failing stage",
			facts: []fact{cand(0, 100, 0, 5, 1), cand(1, 200, 1, 6, 1), cand(2, 50, 2, 7, 1), cl(0, 100, 1), cl(2, 50, 1), out(60, 1)},
			want: []string{
				"stale output a topicA[0]@5 ts=100 exp=100 obs=60",
				"missing changelog b topicB[1]@6 ts=200 exp=200 obs=- unseen app-rb-repartition",
			},
			checkedCL: 3, checkedOut: 2,
		},
		{
			name:  "records all pending at the second hop: nothing to check",
			facts: []fact{tail(0, 100, 1), tail(0, 200, 2), cand(0, 100, 0, 1, 1), cand(0, 200, 0, 2, 2)},
		},
		{
			name: "the evidence is the newest candidate not pending: by timestamp, then partition, then offset",
			facts: []fact{tail(0, 300, 33), cand(0, 100, 0, 1, 11), cand(0, 200, 0, 2, 22), cand(0, 200, 1, 7, 23),
				cand(0, 300, 2, 9, 33), cand(0, 200, 1, 4, 24), cl(0, 150, 5)},
			want:      []string{"stale changelog a topicA[1]@7 ts=200 exp=200 obs=150 unseen app-ra-repartition"},
			checkedCL: 1,
		},
		{
			name:      "a tail copy of an older record does not witness the evidence",
			facts:     []fact{tail(0, 100, 12), cand(0, 300, 0, 1, 11), cand(0, 100, 0, 0, 12)},
			want:      []string{"missing changelog a topicA[0]@1 ts=300 exp=300 obs=- unseen app-ra-repartition"},
			checkedCL: 1,
		},
	}
	e := NewKeyEvidence(3)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.Reset([]byte("k")) // reused across cases: Reset must forget everything
			for _, f := range tt.facts {
				f(e)
			}
			rows, kc := Keys(threeInputs, e, nil)
			var got []string
			for _, r := range rows {
				if string(r.Key) != "k" {
					t.Errorf("row key %q, want k", r.Key)
				}
				got = append(got, rowText(r))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if kc.CheckedChangelog != tt.checkedCL || kc.CheckedOutput != tt.checkedOut {
				t.Errorf("checked changelog %d output %d, want %d %d", kc.CheckedChangelog, kc.CheckedOutput, tt.checkedCL, tt.checkedOut)
			}
		})
	}
}

func TestKeysCountsCandidatesAndPending(t *testing.T) {
	e := NewKeyEvidence(1)
	e.Reset([]byte("k"))
	for _, f := range []fact{tail(0, 300, 33), tail(0, 300, 34), cand(0, 100, 0, 1, 11), cand(0, 300, 2, 9, 33), cand(0, 300, 2, 10, 33)} {
		f(e)
	}
	in := e.Inputs[0]
	if in.Candidates != 3 || in.Pending != 2 || !in.Has || in.Evidence.Offset != 1 {
		t.Errorf("input state = %+v, want 3 candidates, 2 pending, evidence at offset 1", in)
	}
}

func TestKeysWithholdsRowsOfStuckPartitions(t *testing.T) {
	spec := *threeInputs
	spec.Withheld = func(s finding.Stage, x int, key []byte) bool { return s == finding.StageOutput }
	e := NewKeyEvidence(3)
	e.Reset([]byte("k"))
	for _, f := range []fact{cand(0, 100, 0, 5, 1), cand(1, 100, 0, 6, 1), cl(0, 100, 1)} {
		f(e)
	}
	rows, kc := Keys(&spec, e, nil)
	if len(rows) != 1 || rows[0].Input != "b" || rows[0].Stage != finding.StageChangelog {
		t.Fatalf("rows = %+v, want only b's changelog row", rows)
	}
	if kc.Withheld != 1 {
		t.Errorf("withheld = %d, want 1 (a's output row)", kc.Withheld)
	}
}

func TestKeyEvidenceKeepsWhatAStepStores(t *testing.T) {
	e := NewKeyEvidence(1)
	e.Reset([]byte("k"))
	for _, f := range []fact{tail(0, 300, 33), copyOf(0, 200, 22, 1, 9), copyOf(0, 200, 22, 1, 4),
		cand(0, 300, 2, 9, 33), cand(0, 200, 0, 2, 22), cand(0, 100, 0, 1, 11)} {
		f(e)
	}
	if in := e.Inputs[0]; len(in.PendingRecords) != 1 || in.PendingRecords[0] != (InputRecord{TS: 300, Partition: 2, Offset: 9, FP: 33}) {
		t.Errorf("pending records %+v, want the one whose copy is in the tail", in.PendingRecords)
	}
	if p, off, ok := e.Copy(0); !ok || p != 1 || off != 4 {
		t.Errorf("copy of the evidence = %d@%d %v, want the first copy 1@4", p, off, ok)
	}
	var s StageState
	s.Add(StageState{Has: true, TS: 5, Offset: 2, Partition: 3})
	s.Add(StageState{Has: true, TS: 5, Offset: 7, Tombstone: true, HasAborted: true, AbortedTS: 9, Partition: 3})
	s.Add(StageState{Has: true, TS: 4, Offset: 9, Partition: 3})
	if s != (StageState{Has: true, TS: 5, Offset: 7, Tombstone: true, HasAborted: true, AbortedTS: 9, Partition: 3}) {
		t.Errorf("folded stage %+v, want the newest by timestamp then offset, the newest aborted", s)
	}
	e.Reset([]byte("j"))
	if len(e.Inputs[0].PendingRecords) != 0 {
		t.Error("Reset kept pending records")
	}
	if _, _, ok := e.Copy(0); ok {
		t.Error("a key without evidence has a copy")
	}
}
