package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/runner"
	"github.com/lossaudit/lossaudit/config"
)

// profileMain runs one audit in this process (audit/runner.Run, exactly
// what `lossaudit audit` runs), or with -compare one comparison
// (runner.Compare, what `lossaudit compare` runs), with CPU and heap
// profiles:
//
//	bench profile -c /tmp/lossaudit-bench/audit.yaml -cpuprofile cpu.out -memprofile mem.out [-from RFC3339]
//	bench profile -compare -c /tmp/lossaudit-bench/compare.yaml -cpuprofile cpu.out
func profileMain(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	cfgPath := fs.String("c", "", "audit.yaml written by the harness")
	cpu := fs.String("cpuprofile", "", "write a CPU profile here")
	mem := fs.String("memprofile", "", "write a heap profile (at the end of the run) here")
	from := fs.String("from", "", "window start (RFC 3339)")
	cmp := fs.Bool("compare", false, "run lossaudit compare with -c (compare.yaml) instead of the audit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(config.LoadOptions{File: *cfgPath})
	if err != nil {
		return err
	}
	if *from != "" {
		if cfg.Window.From, err = time.Parse(time.RFC3339, *from); err != nil {
			return fmt.Errorf("-from: %w", err)
		}
	}
	if err := os.RemoveAll(cfg.Store.Dir); err != nil {
		return err
	}
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	var res *finding.Result
	if *cmp {
		res, err = runner.Compare(ctx, cfg, runner.Options{})
	} else {
		res, _, err = runner.Run(ctx, cfg, runner.Options{})
	}
	if err != nil {
		return err
	}
	wall := time.Since(start)
	if *mem != "" {
		f, err := os.Create(*mem)
		if err != nil {
			return err
		}
		defer f.Close()
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(stdout, "wall %s, rows %d, partition findings %d, timings %v, heap sys %d MiB, total alloc %d MiB\n",
		wall.Round(time.Millisecond), len(res.Rows), len(res.Summary.Partitions), res.Summary.Timings, ms.HeapSys>>20, ms.TotalAlloc>>20)
	return nil
}
