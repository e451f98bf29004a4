package familye2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/testbed/kafka"
)

// aggregateNode finds the aggregates in a describe() text.
var aggregateNode = regexp.MustCompile(`Processor: (KSTREAM-AGGREGATE-\d{10}) `)

// aggregateInnerJoin runs the join application with aggregates instead of
// reduces (TABLE_OP=aggregate: each table keeps its newest value with
// aggregate(), KSTREAM-AGGREGATE- in describe()) and inner joins, clean and
// dropping chosen keys' results before the output, both at once: the
// audit, with the aggregates declared in pipeline.nodes and pipeline.join:
// inner, must report exactly the injected keys an inner join owes a
// result, as the truth read from the topics says (joinScenario); then a
// clean run while all three brokers are killed and restarted.
func aggregateInnerJoin(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	var wg sync.WaitGroup
	for _, tc := range []struct {
		name string
		drop []string
	}{{name: "clean"}, {name: "lossy", drop: []string{"cust-005", "cust-017", "only-a-2"}}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(tc.name, func(t *testing.T) { joinScenario(ctx, t, c, adm, "aggjoin-"+tc.name, "inner", tc.drop, true, nil) })
		}()
	}
	wg.Wait()
	t.Run("all brokers down", func(t *testing.T) {
		// All three brokers die while the application processes the load.
		joinScenario(ctx, t, c, adm, "aggjoin-outage", "inner", nil, true, func() { allBrokersDown(ctx, t, c) })
	})
}

// aggregateNodes declares every aggregate of text as one, in
// pipeline.nodes (YAML, under pipeline).
func aggregateNodes(t *testing.T, text []byte) string {
	t.Helper()
	ms := aggregateNode.FindAllSubmatch(text, -1)
	if len(ms) != 3 {
		t.Fatalf("want 3 aggregates in the topology, found %d:\n%s", len(ms), text)
	}
	var b strings.Builder
	b.WriteString("  nodes:\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "    - {name: %s, kind: aggregate}\n", m[1])
	}
	return b.String()
}
