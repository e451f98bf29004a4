package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

// profileMain runs one audit in this process (audit/app.Run, exactly
// what `lossaudit audit` runs), or with -compare one comparison
// (app.Compare, what `lossaudit compare` runs), with CPU and heap
// profiles:
//
//	bench profile -c /tmp/lossaudit-bench/audit.yaml -cpuprofile cpu.out -memprofile mem.out [-trace trace.out] [-from RFC3339]
//	bench profile -compare -c /tmp/lossaudit-bench/compare.yaml -cpuprofile cpu.out
//
// With -reconcile it profiles a reconcile step instead: it runs the
// baseline (not profiled) on a fresh store, appends -step-share of the
// loaded input records (the manifest, -manifest, says what is loaded and
// is updated), then profiles the step (audit/app.Reconcile and its
// commit).
func profileMain(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	cfgPath := fs.String("c", "", "audit.yaml written by the harness")
	cpu := fs.String("cpuprofile", "", "write a CPU profile here")
	mem := fs.String("memprofile", "", "write a heap profile (at the end of the run) here")
	trc := fs.String("trace", "", "write an execution trace (go tool trace) here")
	from := fs.String("from", "", "window start (RFC 3339)")
	cmp := fs.Bool("compare", false, "run lossaudit compare with -c (compare.yaml) instead of the audit")
	reconcile := fs.Bool("reconcile", false, "profile a reconcile step after a baseline and -step-share more records")
	manifestPath := fs.String("manifest", "", "the harness's manifest.json (with -reconcile)")
	share := fs.Float64("step-share", 0.01, "input records appended before the step, as a share of those loaded (with -reconcile)")
	appendOnly := fs.Bool("append-only", false, "only append -step-share more records (and what the application writes for them), then exit: to time `lossaudit reconcile` by hand")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *appendOnly {
		_, err := appendRecorded(ctx, *cfgPath, *manifestPath, *share)
		return err
	}
	var step func() (*finding.Result, error)
	if *reconcile {
		var err error
		if step, err = prepareStep(ctx, *cfgPath, *manifestPath, *share, stdout); err != nil {
			return err
		}
	}
	cfg, err := config.Load(config.LoadOptions{IgnoreEnv: testbedenv.Is, File: *cfgPath})
	if err != nil {
		return err
	}
	if *from != "" {
		if cfg.Window.From, err = time.Parse(time.RFC3339, *from); err != nil {
			return fmt.Errorf("-from: %w", err)
		}
	}
	if step == nil {
		if err := os.RemoveAll(cfg.Store.Dir); err != nil {
			return err
		}
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
	if *trc != "" {
		f, err := os.Create(*trc)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	start := time.Now()
	var res *finding.Result
	switch {
	case step != nil:
		res, err = step()
	case *cmp:
		res, err = app.Compare(ctx, cfg, app.Options{})
	default:
		res, _, err = app.Run(ctx, cfg, app.Options{})
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

// prepareStep runs the reconcile baseline on a fresh store.dir of the
// configuration at cfgPath, appends share of the loaded records, and
// returns the step to profile.
func prepareStep(ctx context.Context, cfgPath, manifestPath string, share float64, stdout io.Writer) (func() (*finding.Result, error), error) {
	cfg, err := config.Load(config.LoadOptions{IgnoreEnv: testbedenv.Is, File: cfgPath})
	if err != nil {
		return nil, err
	}
	// A store with a baseline is stepped on; otherwise the baseline runs
	// first.
	_, statErr := os.Stat(filepath.Join(cfg.Store.Dir, app.StateDir))
	haveBaseline := statErr == nil
	if !haveBaseline {
		if err := os.RemoveAll(cfg.Store.Dir); err != nil {
			return nil, err
		}
	}
	run := func() (*finding.Result, error) {
		t0 := time.Now()
		st, err := app.Reconcile(ctx, cfg, app.Options{})
		if err != nil {
			return nil, err
		}
		t1 := time.Now()
		err = st.Commit()
		t2 := time.Now()
		st.Close()
		fmt.Fprintf(stdout, "step %s (phases %v), commit %s, close %s\n", t1.Sub(t0).Round(time.Millisecond), st.Result.Summary.Timings,
			t2.Sub(t1).Round(time.Millisecond), time.Since(t2).Round(time.Millisecond))
		return st.Result, err
	}
	if !haveBaseline {
		t := time.Now()
		if _, err := run(); err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "baseline %s\n", time.Since(t).Round(time.Millisecond))
	}
	_, err = appendRecorded(ctx, cfgPath, manifestPath, share)
	return run, err
}

// appendRecorded appends share of the loaded input records to the pipeline
// of the configuration at cfgPath and records them in the manifest.
func appendRecorded(ctx context.Context, cfgPath, manifestPath string, share float64) (map[string]topicCount, error) {
	m, err := readManifest(manifestPath)
	if err != nil {
		return nil, fmt.Errorf("-reconcile and -append-only need -manifest: %w", err)
	}
	cfg, err := config.Load(config.LoadOptions{IgnoreEnv: testbedenv.Is, File: cfgPath})
	if err != nil {
		return nil, err
	}
	extra := int64(float64(m.Spec.Records) * share)
	added, err := appendData(ctx, cfg.Kafka.Brokers, m, extra, func(string, ...any) {})
	if err != nil {
		return nil, err
	}
	m.Appended += extra
	for topic, c := range added {
		tc := m.Topics[topic]
		tc.Records += c.Records
		tc.Bytes += c.Bytes
		m.Topics[topic] = tc
	}
	return added, m.write(manifestPath)
}
