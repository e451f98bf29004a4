package audit

import (
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/index"
)

var threeInputs = []stageInput{{"a", "topicA"}, {"b", "topicB"}, {"c", "topicC"}}

func ev(ts int64, p int32, off int64) index.InputView {
	return index.InputView{Has: true, Evidence: index.InputRecord{TS: ts, Partition: p, Offset: off}, Candidates: 1}
}

func st(ts int64) index.StageView { return index.StageView{Has: true, TS: ts} }

func TestCheckOneKey(t *testing.T) {
	type want struct {
		input    string
		kind     finding.Kind
		stage    finding.Stage
		observed int64
		hasObs   bool
	}
	tests := []struct {
		name string
		view index.KeyView
		want []want
	}{
		{
			name: "clean: every stage caught up",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), ev(90, 1, 3), {}},
				Changelog: []index.StageView{st(100), st(90), {}}, Output: st(100)},
		},
		{
			name: "stage ahead of the input (newer updates outside the window) is fine",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), {}, {}},
				Changelog: []index.StageView{st(500), {}, {}}, Output: st(600)},
		},
		{
			name: "equal timestamps pass",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), ev(100, 0, 6), {}},
				Changelog: []index.StageView{st(100), st(100), {}}, Output: st(100)},
		},
		{
			name: "changelog missing",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), {}, {}},
				Changelog: []index.StageView{{}, {}, {}}},
			want: []want{{"a", finding.Missing, finding.StageChangelog, 0, false}},
		},
		{
			name: "changelog stale",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), {}, {}},
				Changelog: []index.StageView{st(80), {}, {}}, Output: st(80)},
			want: []want{{"a", finding.Stale, finding.StageChangelog, 80, true}},
		},
		{
			name: "changelog update only in an aborted transaction",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), {}, {}},
				Changelog: []index.StageView{{Has: true, TS: 80, HasAborted: true, AbortedTS: 100}, {}, {}}, Output: st(80)},
			want: []want{{"a", finding.Aborted, finding.StageChangelog, 80, true}},
		},
		{
			name: "older aborted update does not make a missing key aborted",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), {}, {}},
				Changelog: []index.StageView{{HasAborted: true, AbortedTS: 99}, {}, {}}},
			want: []want{{"a", finding.Missing, finding.StageChangelog, 0, false}},
		},
		{
			name: "output missing for a left-table key",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), {}, {}},
				Changelog: []index.StageView{st(100), {}, {}}},
			want: []want{{"a", finding.Missing, finding.StageOutput, 0, false}},
		},
		{
			name: "output stale behind a right-side update",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), {}, ev(300, 2, 9)},
				Changelog: []index.StageView{st(100), {}, st(300)}, Output: st(100)},
			want: []want{{"c", finding.Stale, finding.StageOutput, 100, true}},
		},
		{
			name: "output update only in an aborted transaction",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), {}, {}},
				Changelog: []index.StageView{st(100), {}, {}}, Output: index.StageView{Has: true, TS: 50, HasAborted: true, AbortedTS: 100}},
			want: []want{{"a", finding.Aborted, finding.StageOutput, 50, true}},
		},
		{
			name: "right-only key: no output expected",
			view: index.KeyView{Inputs: []index.InputView{{}, ev(100, 0, 5), {}},
				Changelog: []index.StageView{{}, st(100), {}}},
		},
		{
			name: "left table tombstone: no output expected",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), {}, {}},
				Changelog: []index.StageView{{Has: true, TS: 100, Tombstone: true}, {}, {}}},
		},
		{
			name: "one row per input at its first failing stage",
			view: index.KeyView{Inputs: []index.InputView{ev(100, 0, 5), ev(200, 1, 6), ev(50, 2, 7)},
				Changelog: []index.StageView{st(100), {}, st(50)}, Output: st(60)},
			want: []want{
				{"a", finding.Stale, finding.StageOutput, 60, true},
				{"b", finding.Missing, finding.StageChangelog, 0, false},
			},
		},
		{
			name: "records all pending at the second hop: nothing to check",
			view: index.KeyView{Inputs: []index.InputView{{Candidates: 3, TailMatched: 3}, {}, {}},
				Changelog: []index.StageView{{}, {}, {}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &checker{inputs: threeInputs}
			tt.view.Key = []byte("k")
			rows, _ := c.check(&tt.view, nil)
			if len(rows) != len(tt.want) {
				t.Fatalf("got %d rows %+v, want %d", len(rows), rows, len(tt.want))
			}
			for i, w := range tt.want {
				r := rows[i]
				if r.Input != w.input || r.Kind != w.kind || r.Stage != w.stage || r.HasObserved != w.hasObs || (w.hasObs && r.ObservedTS != w.observed) {
					t.Errorf("row %d = %s/%s/%s observed %d(%v), want %s/%s/%s observed %d(%v)",
						i, r.Input, r.Kind, r.Stage, r.ObservedTS, r.HasObserved, w.input, w.kind, w.stage, w.observed, w.hasObs)
				}
				x := map[string]int{"a": 0, "b": 1, "c": 2}[w.input]
				e := tt.view.Inputs[x].Evidence
				if r.Topic != threeInputs[x].Topic || r.Partition != e.Partition || r.Offset != e.Offset || r.Timestamp != e.TS || r.ExpectedTS != e.TS {
					t.Errorf("row %d evidence = %s[%d]@%d ts %d expected %d, want %s[%d]@%d ts %d",
						i, r.Topic, r.Partition, r.Offset, r.Timestamp, r.ExpectedTS, threeInputs[x].Topic, e.Partition, e.Offset, e.TS)
				}
			}
		})
	}
}

func TestCheckWithholdsRowsOfStuckPartitions(t *testing.T) {
	c := &checker{inputs: threeInputs, withheld: func(s finding.Stage, x int, key []byte) bool {
		return s == finding.StageOutput
	}}
	v := index.KeyView{Key: []byte("k"), Inputs: []index.InputView{ev(100, 0, 5), ev(100, 0, 6), {}},
		Changelog: []index.StageView{st(100), {}, {}}}
	rows, res := c.check(&v, nil)
	if len(rows) != 1 || rows[0].Input != "b" || rows[0].Stage != finding.StageChangelog {
		t.Fatalf("rows = %+v, want only b's changelog row", rows)
	}
	if res.withheld != 1 {
		t.Errorf("withheld = %d, want 1 (a's output row)", res.withheld)
	}
}
