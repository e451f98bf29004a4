package familye2e

import (
	"context"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/testbed/kafka"
)

// countChangelogOnly runs the count by a new key whose table leads nowhere
// (TOPOLOGY=count-changelog: no toStream, no output topic), clean and
// losing the first update of two keys, both at once: lossaudit audit,
// without pipeline.output, audits the changelog alone and must report
// nothing for the clean run and exactly one undercount per injected key
// for the other (countScenario).
func countChangelogOnly(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	for _, tc := range []struct {
		name string
		drop []string
	}{{name: "clean"}, {name: "lossy", drop: []string{"word-13", "word-2"}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			countScenario(ctx, t, c, adm, "changelog-"+tc.name, tc.drop, nil, true)
		})
	}
}
