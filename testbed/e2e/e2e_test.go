package e2e

import "testing"

func TestCleanRun(t *testing.T) {
	res := RunScenario(t, Scenario{Records: 300})
	t.Logf("ledger %d entries, truth %+v", len(res.Ledger.Entries()), res.Truth)
	t.Logf("stages %+v", res.Stages)
}
