package finding

import (
	"bytes"
	"cmp"
	"slices"
)

// SortRows sorts rows in place into report order, the one order every
// report uses: stage in pipeline order (Stage.Order, unknown stages last by
// name), input in the order of inputOrder (inputs not listed come after, by
// name), key bytewise, offset; then kind, topic and partition so that the
// order is total and the output deterministic.
func SortRows(rows []Row, inputOrder []string) {
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
	slices.SortStableFunc(rows, func(a, b Row) int {
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

// SortPartitions sorts partition findings in place by topic, partition and
// kind.
func SortPartitions(pf []PartitionFinding) {
	slices.SortStableFunc(pf, func(a, b PartitionFinding) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
			return c
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
}
