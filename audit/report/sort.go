package report

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// SortRows sorts rows in place into report order: stage in pipeline order
// (finding.Stage.Order, unknown stages last by name), input in the order of
// inputOrder (inputs not listed come after, by name; with no inputOrder, by
// name), key bytewise, offset; then kind, topic and partition so that the
// order is total and the output deterministic.
func SortRows(rows []finding.Row, inputOrder []string) {
	rank := make(map[string]int, len(inputOrder))
	for i, name := range inputOrder {
		if _, dup := rank[name]; !dup {
			rank[name] = i
		}
	}
	inputRank := func(name string) int {
		if r, ok := rank[name]; ok {
			return r
		}
		return len(inputOrder)
	}
	slices.SortStableFunc(rows, func(a, b finding.Row) int {
		if c := cmp.Compare(a.Stage.Order(), b.Stage.Order()); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Stage, b.Stage); c != 0 {
			return c
		}
		if c := cmp.Compare(inputRank(a.Input), inputRank(b.Input)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Input, b.Input); c != 0 {
			return c
		}
		if c := bytes.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Offset, b.Offset); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}

// sortedCopy returns the rows of res in report order without touching
// res.Rows.
func sortedCopy(res *finding.Result) []finding.Row {
	rows := slices.Clone(res.Rows)
	SortRows(rows, res.Summary.InputOrder)
	return rows
}
