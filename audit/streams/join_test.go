package streams

import (
	"fmt"
	"testing"
)

// TestRunJoinTypes: the same two tables, with and without join results,
// judged by each join type's output rule. kA is only in a's table, kB only
// in b's, kAB in both; "lost" marks a key whose join result never reached
// the output although the join type writes one.
func TestRunJoinTypes(t *testing.T) {
	cases := []struct {
		join string
		// out says which keys the application wrote a result for.
		out  map[string]bool
		want []string
	}{
		{join: "left", out: map[string]bool{"kA": true, "kAB": true}},
		{join: "left", out: map[string]bool{"kAB": true}, want: []string{"missing output a kA inA[0]@0"}},
		{join: "inner", out: map[string]bool{"kAB": true}},
		{join: "inner", out: map[string]bool{}, want: []string{"missing output a kAB inA[1]@0", "missing output b kAB inB[1]@0"}},
		{join: "outer", out: map[string]bool{"kA": true, "kB": true, "kAB": true}},
		{join: "outer", out: map[string]bool{"kA": true, "kAB": true}, want: []string{"missing output b kB inB[0]@0"}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %v", tc.join, tc.out), func(t *testing.T) {
			tp := newTestPipeline(t)
			tp.opt.Join = tc.join
			tp.process(0, 0, "kA", 10, "x", false, !tc.out["kA"])
			tp.process(1, 0, "kB", 10, "x", false, !tc.out["kB"])
			tp.process(0, 1, "kAB", 10, "x", false, true)
			tp.process(1, 1, "kAB", 11, "x", false, !tc.out["kAB"])
			res := tp.run(t)
			if got := rowsString(res.Rows); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("rows %q, want %q", got, tc.want)
			}
		})
	}
}
