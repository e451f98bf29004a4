package e2e

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/testbed/loadgen"
)

func subTopology(n, topic, store string) string {
	return "  Sub-topology: " + n + "\n    Source: KSTREAM-SOURCE-0000000000 (topics: [" + topic + "])\n" +
		"      --> KSTREAM-KEY-SELECT-0000000001\n" +
		"    Sink: KSTREAM-SINK-0000000004 (topic: " + store + "-repartition)\n      <-- KSTREAM-FILTER-0000000005\n\n"
}

func TestParseStages(t *testing.T) {
	full := "Topologies:\n" + subTopology("0", "in-a", "KSTREAM-REDUCE-STATE-STORE-0000000002") +
		subTopology("1", "in-b", "KSTREAM-REDUCE-STATE-STORE-0000000009") +
		subTopology("2", "in-c", "KSTREAM-REDUCE-STATE-STORE-0000000016") +
		"  Sub-topology: 3\n    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-REDUCE-STATE-STORE-0000000002-repartition])\n" +
		"    Sink: KSTREAM-SINK-0000000031 (topic: joined)\n"
	for _, tc := range []struct {
		name, text string
		want       map[string]Stage
		wantErr    string
	}{
		{name: "three inputs", text: full, want: map[string]Stage{
			"a": {Input: "a", Topic: "in-a", Store: "KSTREAM-REDUCE-STATE-STORE-0000000002",
				Repartition: "lossaudit-tb-KSTREAM-REDUCE-STATE-STORE-0000000002-repartition",
				Changelog:   "lossaudit-tb-KSTREAM-REDUCE-STATE-STORE-0000000002-changelog"},
			"b": {Input: "b", Topic: "in-b", Store: "KSTREAM-REDUCE-STATE-STORE-0000000009",
				Repartition: "lossaudit-tb-KSTREAM-REDUCE-STATE-STORE-0000000009-repartition",
				Changelog:   "lossaudit-tb-KSTREAM-REDUCE-STATE-STORE-0000000009-changelog"},
			"c": {Input: "c", Topic: "in-c", Store: "KSTREAM-REDUCE-STATE-STORE-0000000016",
				Repartition: "lossaudit-tb-KSTREAM-REDUCE-STATE-STORE-0000000016-repartition",
				Changelog:   "lossaudit-tb-KSTREAM-REDUCE-STATE-STORE-0000000016-changelog"},
		}},
		{name: "input c missing", text: "Topologies:\n" + subTopology("0", "in-a", "S2") + subTopology("1", "in-b", "S9"),
			wantErr: "found stages for 2 of 3 inputs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "topology.txt")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ParseStages(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func entry(in, key string, seq, ts int64) loadgen.Entry {
	return loadgen.Entry{Input: in, Key: key, Seq: seq, Timestamp: ts}
}

func ks(ts int64, key string) KeyState { return KeyState{TS: ts, ValueKey: key} }

func TestCheck(t *testing.T) {
	ledger := loadgen.FromEntries([]loadgen.Entry{
		entry("a", "k1", 0, 100), entry("a", "k1", 1, 200),
		entry("b", "k1", 0, 150),
		entry("a", "k2", 2, 300),
	})
	for _, tc := range []struct {
		name     string
		obs      Observed
		want     []Discrepancy
		problems int
	}{
		{name: "complete", obs: Observed{
			Changelog: map[string]map[string]KeyState{"a": {"k1": ks(200, "k1"), "k2": ks(300, "k2")}, "b": {"k1": ks(150, "k1")}},
			Output:    map[string]KeyState{"k1": ks(200, "k1"), "k2": ks(300, "k2")}}},
		{name: "stale changelog, missing changelog, missing output", obs: Observed{
			Changelog: map[string]map[string]KeyState{"a": {"k1": ks(100, "k1"), "k2": ks(300, "k2")}, "b": {}},
			Output:    map[string]KeyState{"k1": ks(100, "k1")}},
			want: []Discrepancy{
				{Stage: "changelog", Input: "a", Key: "k1", Kind: "stale", Want: 200, Got: 100},
				{Stage: "changelog", Input: "b", Key: "k1", Kind: "missing", Want: 150},
				{Stage: "output", Key: "k2", Kind: "missing", Want: 300},
			}},
		{name: "tombstone counts as missing; output behind the newest changelog", obs: Observed{
			Changelog: map[string]map[string]KeyState{"a": {"k1": ks(200, "k1"), "k2": {TS: 300, Null: true}}, "b": {"k1": ks(150, "k1")}},
			Output:    map[string]KeyState{"k1": ks(150, "k1")}},
			want: []Discrepancy{
				{Stage: "changelog", Input: "a", Key: "k2", Kind: "missing", Want: 300},
				{Stage: "output", Key: "k1", Kind: "stale", Want: 200, Got: 150},
			}},
		{name: "a customerId that is not UTF-8 is keyed as Java decodes it", obs: Observed{
			Changelog: map[string]map[string]KeyState{"a": {"k1": ks(200, "k1"), "k2": ks(300, "k2"), "\uFFFD\uFFFD-x": ks(50, "\xff\xfe-x")}, "b": {"k1": ks(150, "k1")}},
			Output:    map[string]KeyState{"k1": ks(200, "k1"), "k2": ks(300, "k2"), "\uFFFD\uFFFD-x": ks(50, "\uFFFD\uFFFD-x")}}},
		{name: "a customerId that is not UTF-8 under its raw bytes", obs: Observed{
			Changelog: map[string]map[string]KeyState{"a": {"k1": ks(200, "k1"), "k2": ks(300, "k2"), "\xff\xfe-x": ks(50, "\xff\xfe-x")}, "b": {"k1": ks(150, "k1")}},
			Output:    map[string]KeyState{"k1": ks(200, "k1"), "k2": ks(300, "k2"), "\xff\xfe-x": ks(50, "\xff\xfe-x")}},
			problems: 2},
		{name: "value of another customer", obs: Observed{
			Changelog: map[string]map[string]KeyState{"a": {"k1": ks(200, "k9"), "k2": ks(300, "k2")}, "b": {"k1": ks(150, "k1")}},
			Output:    map[string]KeyState{"k1": ks(200, "k1"), "k2": ks(300, "k2")}},
			problems: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := Check(ledger, &tc.obs)
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
			if len(problems) != tc.problems {
				t.Errorf("problems %v, want %d", problems, tc.problems)
			}
		})
	}
}

func TestInjected(t *testing.T) {
	ledger := loadgen.FromEntries([]loadgen.Entry{
		entry("a", "k1", 0, 100), entry("b", "k1", 0, 400), entry("c", "k1", 0, 250),
		entry("a", "k2", 1, 300), entry("b", "k3", 1, 500),
	})
	got := Injected(ledger, map[string][]string{"b": {"k1", "absent"}, "a": {"k2"}}, []string{"k1", "k2", "k3"})
	want := []Discrepancy{
		{Stage: "changelog", Input: "a", Key: "k2", Kind: "missing", Want: 300},
		{Stage: "changelog", Input: "b", Key: "k1", Kind: "missing", Want: 400},
		// k1's output misses its newest surviving update (c at 250, b was dropped);
		// k2 never reached tA and k3 is not in a: no output discrepancy for them.
		{Stage: "output", Key: "k1", Kind: "missing", Want: 250},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

// TestFromAuditOutputWantsNewest: the audit reports a missing output key
// once per input that did not arrive; the testbed's check wants the newest
// of those timestamps, whichever input's row comes first.
func TestFromAuditOutputWantsNewest(t *testing.T) {
	res := &finding.Result{Rows: []finding.Row{
		{Kind: finding.Missing, Stage: finding.StageOutput, Input: "a", Key: []byte("k1"), ExpectedTS: 100},
		{Kind: finding.Missing, Stage: finding.StageOutput, Input: "b", Key: []byte("k1"), ExpectedTS: 300},
		{Kind: finding.Missing, Stage: finding.StageOutput, Input: "c", Key: []byte("k1"), ExpectedTS: 200},
		{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "a", Key: []byte("k2"), ExpectedTS: 50},
		{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "b", Key: []byte("k2"), ExpectedTS: 60},
	}}
	want := []Discrepancy{
		{Stage: "changelog", Input: "a", Key: "k2", Kind: "missing", Want: 50},
		{Stage: "changelog", Input: "b", Key: "k2", Kind: "missing", Want: 60},
		{Stage: "output", Key: "k1", Kind: "missing", Want: 300},
	}
	if got := FromAudit(res); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}
