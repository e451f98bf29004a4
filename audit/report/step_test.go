package report

import (
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// TestWriteStep: a reconcile step's lines name what the mode keeps and
// counts: keys and input counters for a pipeline, record identities and
// pair counters for a comparison, whose baseline is a full comparison.
func TestWriteStep(t *testing.T) {
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		st   finding.Step
		want []string
	}{
		{"pipeline baseline", finding.Step{Number: 1, Baseline: true, BaselineAt: at, KeysJudged: 2,
			Read: map[string]int64{"input": 5, "repartition": 0, "changelog": 3, "output": 1}},
			[]string{"the baseline (a full audit)", "read 5 input, 0 repartition, 3 changelog and 1 output records; 2 keys judged (the input counters above"}},
		{"comparison baseline", finding.Step{Number: 1, Baseline: true, BaselineAt: at, KeysJudged: 1,
			Read: map[string]int64{"source": 7, "sink": 6}},
			[]string{"the baseline (a full comparison)", "read 7 source and 6 sink records; 1 record identity judged (the pair counters above"}},
		{"comparison step", finding.Step{Number: 2, BaselineAt: at, Previous: at, KeysJudged: 3,
			Read: map[string]int64{"source": 0, "sink": 2}},
			[]string{"Reconcile step 2: incremental", "read 0 source and 2 sink records; 3 record identities judged (the pair counters above"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			st := tt.st
			writeStep(&b, &finding.Result{Summary: finding.Summary{Step: &st}})
			got := strings.Join(strings.Fields(b.String()), " ")
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("step lines\n%s\nlack %q", b.String(), w)
				}
			}
		})
	}
}
