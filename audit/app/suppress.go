package app

import (
	"fmt"

	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// refuseBuffers stops a reconcile step (and watch) on a pipeline with a
// suppress buffer: a step would need the buffer's last record per key in
// its state, which it does not keep yet, and without it a key waiting in
// the buffer would be reported missing at the output. `audit` checks it.
func refuseBuffers(m *topology.Model) error {
	if m.ChangelogOnly {
		return &config.Error{Key: "pipeline.topology_file", Msg: fmt.Sprintf("the table of input %s ends in its changelog (no output topic): `lossaudit audit` checks it, reconcile and watch do not yet", m.Stages[0].Input.Name)}
	}
	for _, s := range m.Stages {
		if s.Window != nil {
			return &config.Error{Key: "pipeline.nodes", Msg: fmt.Sprintf("input %s is a windowed aggregation (%s, %s): `lossaudit audit` checks it, reconcile and watch do not yet", s.Input.Name, s.Operator, s.Window)}
		}
		if s.BufferStore != "" {
			return &config.Error{Key: "pipeline.topology_file", Msg: fmt.Sprintf("input %s passes a suppress (buffer store %s) before the output: `lossaudit audit` checks it, reconcile and watch do not yet (a step does not carry the buffer's state)", s.Input.Name, s.BufferStore)}
		}
	}
	return nil
}
