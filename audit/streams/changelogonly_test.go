package streams

import (
	"fmt"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// TestRunChangelogOnly: a count whose table leads nowhere (no output
// topic) is audited on its changelog alone: the table rule and the
// recount, and no output stage is read or checked.
func TestRunChangelogOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose map[int]bool
		want []string
	}{
		{name: "clean"},
		{name: "two updates of k1 lost", lose: map[int]bool{1: true, 4: true}, want: []string{"k1 undercount count"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := newCountPipeline(t)
			cp.opt.Output = ""
			delete(cp.f.parts, "out") // the topic does not exist
			for i := range 15 {
				cp.processNoOutput(int32(i%2), fmt.Sprintf("k%d", i%3), int64(1000+i), tc.lose[i])
			}
			res := cp.run(t)
			var got []string
			for _, r := range res.Rows {
				got = append(got, fmt.Sprintf("%s %s %s", r.Key, r.Kind, r.Stage))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
			if n := res.Summary.Stages[finding.StageOutput].KeysChecked; n != 0 {
				t.Errorf("%d output keys checked, want none", n)
			}
		})
	}
	t.Run("a missing changelog update is still found", func(t *testing.T) {
		cp := newCountPipeline(t)
		cp.opt.Output = ""
		cp.opt.Inputs[0].Count = false
		for i := range 3 {
			cp.processNoOutput(0, "k0", int64(1000+i), i == 2)
		}
		res := cp.run(t)
		if len(res.Rows) != 1 || res.Rows[0].Kind != finding.Stale || res.Rows[0].Stage != finding.StageChangelog {
			t.Fatalf("rows %v, want one stale changelog row", rowsString(res.Rows))
		}
	})
}

// processNoOutput is process without the output write.
func (cp *countPipeline) processNoOutput(p int32, key string, ts int64, lose bool) {
	out := cp.f.parts["out"]
	cp.f.topic("out", 2)
	cp.process(p, key, ts, lose)
	if out == nil {
		delete(cp.f.parts, "out")
	} else {
		cp.f.parts["out"] = out
	}
}
