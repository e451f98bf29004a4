package finding_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func rowID(r finding.Row) string {
	return fmt.Sprintf("%s/%s/%s/%q/%d", r.Stage, r.Input, r.Kind, r.Key, r.Offset)
}

func TestSortRows(t *testing.T) {
	row := func(st finding.Stage, in, key string, off int64) finding.Row {
		return finding.Row{Kind: finding.Missing, Stage: st, Input: in, Key: []byte(key), Offset: off}
	}
	cl, out := finding.StageChangelog, finding.StageOutput
	tests := []struct {
		name  string
		order []string
		want  []finding.Row
	}{
		{
			name:  "configured input order, not alphabetical",
			order: []string{"orders", "customers", "addresses"},
			want: []finding.Row{
				row(cl, "orders", "k", 1), row(cl, "customers", "A", 1), row(cl, "customers", "B", 1),
				row(cl, "customers", "a", 1), row(cl, "customers", "a", 2), row(cl, "addresses", "k", 1),
				row(cl, "zzz-unlisted", "k", 1), row(out, "orders", "k", 1), row(out, "addresses", "k", 1), row("future", "a", "k", 1),
			},
		},
		{
			name: "no order: inputs by name",
			want: []finding.Row{
				row(cl, "addresses", "k", 1), row(cl, "customers", "A", 1), row(cl, "customers", "B", 1),
				row(cl, "customers", "a", 1), row(cl, "customers", "a", 2), row(cl, "orders", "k", 1),
				row(cl, "zzz-unlisted", "k", 1), row(out, "addresses", "k", 1), row(out, "orders", "k", 1), row("future", "a", "k", 1),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			for range 20 {
				rows := slices.Clone(tt.want)
				rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
				finding.SortRows(rows, tt.order)
				for i := range rows {
					if rowID(rows[i]) != rowID(tt.want[i]) {
						t.Fatalf("position %d: got %s, want %s", i, rowID(rows[i]), rowID(tt.want[i]))
					}
				}
			}
		})
	}
}

func TestSortRowsKeyIsBytewise(t *testing.T) {
	rows := []finding.Row{
		{Stage: finding.StageChangelog, Input: "a", Key: []byte{0xff}},
		{Stage: finding.StageChangelog, Input: "a", Key: []byte("é")}, // 0xc3 0xa9
		{Stage: finding.StageChangelog, Input: "a", Key: []byte("z")},
		{Stage: finding.StageChangelog, Input: "a", Key: nil},
	}
	finding.SortRows(rows, nil)
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%x", r.Key))
	}
	want := []string{"", "7a", "c3a9", "ff"}
	if !slices.Equal(got, want) {
		t.Fatalf("keys sorted %v, want %v", got, want)
	}
}
