package app

import (
	"fmt"

	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// stepRefusesWindows stops a reconcile step (and watch) on a windowed
// aggregation: a step reads only the records processed since the last
// one, while the windowed check bounds each partition's stream time by
// its greatest timestamp read from the partition's start. `audit` checks
// it.
func stepRefusesWindows(m *topology.Model) error {
	for _, s := range m.Stages {
		if s.Window != nil {
			return &config.Error{Key: "pipeline.nodes", Msg: fmt.Sprintf("input %s is a windowed aggregation (%s, %s): `lossaudit audit` checks it, reconcile and watch do not yet", s.Input.Name, s.Operator, s.Window)}
		}
	}
	return nil
}
