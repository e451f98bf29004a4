package main

import (
	"fmt"

	"github.com/lossaudit/lossaudit/audit/streams/topology"
)

// streamRows are the stage map's rows of input i of a per-record stream
// stage: the input and the repartition topics on its path, no store and
// no changelog (the stage has none; a left-joined table's is not audited).
func streamRows(m *topology.Model, i int) []topicRow {
	s := m.Stages[i]
	in := s.Input.Name
	rows := []topicRow{{in, "input", s.Input.Topic, topology.FromConfig, fmt.Sprintf("pipeline.inputs[%d].topic", i), true}}
	for _, l := range m.Stream.Inputs[i].Links {
		rows = append(rows, topicRow{in, "repartition", l, topology.FromTopology, "", true})
	}
	return rows
}
