package sim

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// resultOf turns an expectation into the audit result that matches it.
func resultOf(x Expectation) *finding.Result {
	res := &finding.Result{Rows: append([]finding.Row(nil), x.Rows...)}
	res.Summary.Partitions = append(res.Summary.Partitions, x.Partitions...)
	res.Summary.Partial = x.Partial
	res.Summary.Inputs = map[string]*finding.InputCounts{}
	for n, c := range x.Counts {
		c := c
		res.Summary.Inputs[n] = &c
	}
	return res
}

func TestDiff(t *testing.T) {
	c, err := newCodecs()
	if err != nil {
		t.Fatal(err)
	}
	sc := DemoScenario(3).withDefaults()
	sc.RecordsPerInput, sc.Keys = 3000, 300
	in, err := generate(sc, c)
	if err != nil {
		t.Fatal(err)
	}
	pl := basePlan(sc, newRand(sc.Seed))
	_, x, err := dryRun(context.Background(), sc, c, in, pl)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Rows) == 0 || len(x.Partitions) == 0 {
		t.Fatalf("want a dry run with findings, got %d rows %d partitions", len(x.Rows), len(x.Partitions))
	}
	cases := []struct {
		name  string
		edit  func(r *finding.Result)
		wants []string
	}{
		{"equal", func(*finding.Result) {}, nil},
		{"a witness that was not seen", func(r *finding.Result) {
			for i := range r.Rows {
				if w := r.Rows[i].Witness; w != nil && w.Seen {
					r.Rows[i].Witness = &finding.Witness{Topic: w.Topic}
					return
				}
			}
			r.Rows[0].Witness = &finding.Witness{Topic: "t", Seen: true}
		}, []string{"unexpected row: ", "missing row: "}},
		{"missing row", func(r *finding.Result) { r.Rows = r.Rows[1:] }, []string{"missing row: "}},
		{"extra row", func(r *finding.Result) { r.Rows = append(r.Rows, r.Rows[0]) }, []string{"unexpected row: "}},
		{"wrong kind", func(r *finding.Result) { r.Rows[0].Kind = "other" }, []string{"unexpected row: ", "missing row: "}},
		{"wrong offset", func(r *finding.Result) { r.Rows[0].Offset++ }, []string{"unexpected row: ", "missing row: "}},
		{"partition finding", func(r *finding.Result) { r.Summary.Partitions = nil }, []string{"missing partition finding: purged_past_commit"}},
		{"counters", func(r *finding.Result) { r.Summary.Inputs["b"].Pending++ }, []string{"input b: counters"}},
		{"partial", func(r *finding.Result) { r.Summary.Partial = true }, []string{"partial true, want false"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := resultOf(x)
			tc.edit(res)
			d := x.Diff(res)
			if len(d) != len(tc.wants) {
				t.Fatalf("diff %q, want %d lines like %q", d, len(tc.wants), tc.wants)
			}
			for i, w := range tc.wants {
				if !strings.HasPrefix(d[i], w) {
					t.Errorf("line %d %q, want prefix %q", i, d[i], w)
				}
			}
		})
	}
}

func TestWriteStory(t *testing.T) {
	brokers := newCluster(t)
	sc := DemoScenario(2)
	sc.RecordsPerInput, sc.Keys, sc.RightOnlyKeys = 3000, 300, 10
	tr := run(t, brokers, sc)
	var b bytes.Buffer
	if err := tr.WriteStory(&b); err != nil {
		t.Fatal(err)
	}
	story := b.String()
	for _, in := range tr.Injected {
		if in.Loss && in.Key != "" && !strings.Contains(story, in.Key) {
			t.Errorf("story does not name lost key %s", in.Key)
		}
	}
	for _, want := range []string{"Injected losses", "NOT loss", string(KindHealthyRetry), string(KindInputLag), "purged_past_commit"} {
		if !strings.Contains(story, want) {
			t.Errorf("story lacks %q:\n%s", want, story)
		}
	}
	t.Log("\n" + story)
}

// TestDemoPlacement checks, without a cluster, that demo-mode placement
// finds a home for every requested fault for several seeds.
func TestDemoPlacement(t *testing.T) {
	c, err := newCodecs()
	if err != nil {
		t.Fatal(err)
	}
	for seed := int64(1); seed <= 3; seed++ {
		sc := DemoScenario(seed).withDefaults()
		in, err := generate(sc, c)
		if err != nil {
			t.Fatal(err)
		}
		pl := basePlan(sc, newRand(sc.Seed))
		var st Stats
		if err := demoFaults(context.Background(), sc, c, in, pl, newRand(sc.Seed), &st); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		count := map[FaultKind]int{}
		for _, k := range pl.faults {
			count[k]++
		}
		for _, kk := range keyedKinds(sc.Faults) {
			if count[kk.k] != kk.n {
				t.Errorf("seed %d: placed %d %s, asked %d (%d dry runs)", seed, count[kk.k], kk.k, kk.n, st.DryRuns)
			}
		}
	}
}
