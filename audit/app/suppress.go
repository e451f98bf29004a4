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
	for _, s := range m.Stages {
		if s.BufferStore != "" {
			return &config.Error{Key: "pipeline.topology_file", Msg: fmt.Sprintf("input %s passes a suppress (buffer store %s) before the output: `lossaudit audit` checks it, reconcile and watch do not yet (a step does not carry the buffer's state)", s.Input.Name, s.BufferStore)}
		}
	}
	return nil
}
