package sim

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestScale (opt-in: LOSSAUDIT_SIM_SCALE=<records per input>) measures a
// large run on kfake.
func TestScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LOSSAUDIT_SIM_SCALE"))
	if n == 0 {
		t.Skip("set LOSSAUDIT_SIM_SCALE=<records per input>")
	}
	brokers := newCluster(t)
	sc := DemoScenario(1)
	sc.RecordsPerInput, sc.Keys = n, n/7
	start := time.Now()
	tr := run(t, brokers, sc)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	t.Logf("%d records/input: %v, %+v, heap in use %d MiB, sys %d MiB, rows %d",
		n, time.Since(start), tr.Stats, m.HeapInuse>>20, m.Sys>>20, len(tr.Rows))
}
