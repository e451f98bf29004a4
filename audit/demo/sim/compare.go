package sim

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// rowSig renders what must match between an audit's row and an expected
// one: every field, with a changelog row's witness (seen in the repartition
// topic at an offset, or not).
func rowSig(r finding.Row) string {
	obs := "-"
	if r.HasObserved {
		obs = fmt.Sprint(r.ObservedTS)
	}
	detail := witnessSig(r)
	return fmt.Sprintf("%s %s input=%s key=%q %s[%d]@%d ts=%d expected=%d observed=%s %s",
		r.Stage, r.Kind, r.Input, r.Key, r.Topic, r.Partition, r.Offset, r.Timestamp, r.ExpectedTS, obs, detail)
}

func partSig(p finding.PartitionFinding) string {
	return fmt.Sprintf("%s %s[%d]", p.Kind, p.Topic, p.Partition)
}

// Diff compares an audit result with the expectation and returns one line
// per difference (empty when they agree): rows only one side has, partition
// findings only one side has, per-input counters that differ, and a
// different partial flag. Rows are compared as described in the package
// documentation.
func (x Expectation) Diff(res *finding.Result) []string {
	var out []string
	diffSets := func(what string, got, want []string) {
		g, w := map[string]int{}, map[string]int{}
		for _, s := range got {
			g[s]++
		}
		for _, s := range want {
			w[s]++
		}
		for _, s := range got {
			if g[s] > w[s] {
				out = append(out, fmt.Sprintf("unexpected %s: %s", what, s))
				g[s]--
			}
		}
		for _, s := range want {
			if w[s] > g[s] {
				out = append(out, fmt.Sprintf("missing %s: %s", what, s))
				w[s]--
			}
		}
	}
	var got, want []string
	for _, r := range res.Rows {
		got = append(got, rowSig(r))
	}
	for _, r := range x.Rows {
		want = append(want, rowSig(r))
	}
	diffSets("row", got, want)
	got, want = nil, nil
	for _, p := range res.Summary.Partitions {
		got = append(got, partSig(p))
	}
	for _, p := range x.Partitions {
		want = append(want, partSig(p))
	}
	diffSets("partition finding", got, want)
	names := make([]string, 0, len(x.Counts))
	for n := range x.Counts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := x.Counts[n]
		g := res.Summary.Inputs[n]
		if g == nil {
			out = append(out, fmt.Sprintf("input %s: no counters, want %+v", n, c))
		} else if *g != c {
			out = append(out, fmt.Sprintf("input %s: counters %+v, want %+v", n, *g, c))
		}
	}
	if res.Summary.Partial != x.Partial {
		out = append(out, fmt.Sprintf("partial %v, want %v", res.Summary.Partial, x.Partial))
	}
	return out
}

// Expectation returns the expectation of an audit without window.
func (t *Truth) Expectation() Expectation {
	return Expectation{Rows: t.Rows, Partitions: t.Partitions, Counts: t.Counts, Partial: t.Partial}
}

// Diff compares an audit without window with the truth (see
// Expectation.Diff).
func (t *Truth) Diff(res *finding.Result) []string { return t.Expectation().Diff(res) }

// WriteStory writes, for people, what the simulation did: the pipeline, the
// volumes, and every injection, the losses first.
func (t *Truth) WriteStory(w io.Writer) error {
	sc := t.Scenario
	var b strings.Builder
	fmt.Fprintf(&b, "Simulated Kafka Streams application %q (exactly_once_v2): %s, %s, %s -> selectKey(customerId) -> reduce -> leftJoin -> %s\n",
		t.AppID, t.Inputs[0].Topic, t.Inputs[1].Topic, t.Inputs[2].Topic, t.Output)
	fmt.Fprintf(&b, "%d input records (%d per input, %d customer ids, %d partitions), %d records written by the application in %d transactions (%d aborted)\n",
		t.Stats.InputRecords, sc.RecordsPerInput, sc.Keys+sc.RightOnlyKeys, sc.Partitions, t.Stats.Written, t.Stats.Transactions, t.Stats.Aborted)
	tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
	losses, benign := 0, 0
	for _, in := range t.Injected {
		if in.Loss {
			losses++
		} else {
			benign++
		}
	}
	fmt.Fprintf(&b, "\nInjected losses (%d), each of which the audit must report:\n", losses)
	fmt.Fprintln(tw, "  fault\tinput\tkey\trecord\ttimestamp\texpected finding\tdetail")
	for _, in := range t.Injected {
		if in.Loss {
			writeInjection(tw, in)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nDisturbances that are NOT loss (%d), which the audit must not report:\n", benign)
	fmt.Fprintln(tw, "  fault\tinput\tkey\trecord\ttimestamp\texpected finding\tdetail")
	for _, in := range t.Injected {
		if !in.Loss {
			writeInjection(tw, in)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var nk, nv, de int64
	for _, c := range t.Counts {
		nk, nv, de = nk+c.NullKey, nv+c.NullValue, de+c.DecodeErrors
	}
	fmt.Fprintf(&b, "  plus %d null customerIds, %d null values, %d undecodable values (dropped by design), tombstones, out-of-order and equal timestamps, and customer ids only in %s/%s (no output expected)\n",
		nk, nv, de, t.Inputs[1].Topic, t.Inputs[2].Topic)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeInjection(tw io.Writer, in Injection) {
	rec, ts, exp := "", "", "none"
	if in.Topic != "" {
		rec = fmt.Sprintf("%s[%d]@%d", in.Topic, in.Partition, in.Offset)
	}
	if in.Timestamp != 0 {
		ts = time.UnixMilli(in.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	switch {
	case in.Stage != "":
		exp = fmt.Sprintf("%s at %s", in.Finding, in.Stage)
	case in.Kind == KindPurged17635 && in.Loss:
		exp = string(finding.PurgedPastCommit)
	case in.Kind == KindHangingTxn:
		exp = string(finding.StuckLSO)
	}
	fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", in.Kind, in.Input, in.Key, rec, ts, exp, in.Detail)
}
