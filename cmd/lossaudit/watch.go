package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/metrics"
	"github.com/lossaudit/lossaudit/audit/report"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// newWatchCmd returns `lossaudit watch`: reconcile steps forever, with
// metrics, a health check and the last step's reports over HTTP.
func newWatchCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "watch",
		Short: "Reconcile steps forever, serving metrics, health and the last reports over HTTP",
		Long: "Runs a reconcile step every watch.interval (--interval) and serves, on watch.listen\n" +
			"(--listen): /metrics (Prometheus), /healthz (200 while the last step succeeded within three\n" +
			"intervals), /report.json and /loss-report.csv (the last completed step's reports). Each step\n" +
			"also writes the configured report files, and logs one line to stderr (--log-format json for\n" +
			"JSON). It listens on loopback by default; --web.config.file adds TLS and basic authentication\n" +
			"(exporter-toolkit's format, docs/security.md). SIGTERM or Ctrl-C stops it; a step cut short\n" +
			"is not committed, and the next run of watch or reconcile continues from the last committed\n" +
			"one (docs/reconcile.md).",
		Example: "  lossaudit watch -c audit.yaml --interval 1m --listen 127.0.0.1:9464",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadStep(cmd)
			if err != nil {
				return err
			}
			if err := cfg.ValidateWatch(); err != nil {
				return err
			}
			return watch(cmd.Context(), cfg, cmd.ErrOrStderr())
		},
	}
}

// watcher is the state `watch` serves: the last completed step and how
// the steps fared.
type watcher struct {
	interval time.Duration
	config   string // the configuration, redacted, for the HTML report
	started  time.Time
	m        *metrics.Set
	now      func() time.Time

	mu          sync.Mutex
	last        *finding.Result // the last completed step
	lastSuccess time.Time
	lastFailure time.Time
	lastErr     string
	running     bool
}

func watch(ctx context.Context, cfg *config.Config, stderr io.Writer) error {
	var h slog.Handler = slog.NewTextHandler(stderr, nil)
	if cfg.Watch.LogFormat == config.LogJSON {
		h = slog.NewJSONHandler(stderr, nil)
	}
	log := slog.New(h)
	w := &watcher{interval: cfg.Watch.Interval, config: cfg.Redacted(), started: time.Now(), m: metrics.New(), now: time.Now}
	web, err := readWebConfig(cfg.Watch.WebConfigFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Watch.Listen)
	if err != nil {
		return &config.Error{Key: "watch.listen", Msg: fmt.Sprintf("cannot listen on %s: %v", cfg.Watch.Listen, err)}
	}
	srv, served := serveWatch(ln, w.handler(), cfg.Watch.WebConfigFile, h)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("watching", "listen", ln.Addr().String(), "tls", web.tls, "basic_auth", web.auth,
		"interval", cfg.Watch.Interval.String(), "store_dir", cfg.Store.Dir)
	if warning := web.exposure(ln.Addr()); warning != "" {
		log.Warn(warning, "listen", ln.Addr().String())
	}
	warnings := newStepWarnings(log)
	for {
		started := w.now()
		w.setRunning(true)
		out, err := reconcileStep(ctx, cfg, app.Options{Warnings: warnings}, io.Discard, io.Discard, failpointsFromEnv(ctx), nil)
		took := w.now().Sub(started)
		w.setRunning(false)
		if ctx.Err() != nil {
			log.Info("stopped", "reason", context.Cause(ctx).Error())
			return watchStopped{}
		}
		var unsupported *topology.UnsupportedError
		if errors.As(err, &unsupported) {
			// The topology holds a node the audit does not support: no
			// later step can succeed, so watch stops (exit 2).
			log.Error("step failed", "error", err.Error())
			return err
		}
		if err == nil && len(out.failed) > 0 {
			err = errors.New(out.failed[0])
		}
		if err != nil {
			w.failed(started, err)
			log.Error("step failed", "error", err.Error(), "took", took.Round(time.Millisecond).String(),
				"next", started.Add(w.interval).UTC().Format(time.RFC3339))
		} else {
			w.completed(out.res, started)
			logStep(log, out.res, took, started.Add(w.interval))
		}
		select {
		case <-ctx.Done():
			log.Info("stopped", "reason", context.Cause(ctx).Error())
			return watchStopped{}
		case err := <-served:
			return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
		case <-time.After(time.Until(started.Add(w.interval))):
		}
	}
}

// logStep logs the one line of a completed step.
func logStep(log *slog.Logger, res *finding.Result, took time.Duration, next time.Time) {
	s := &res.Summary
	attrs := []any{"verdict", report.Verdict(res), "findings", len(res.Rows), "resolved", len(res.Resolved),
		"partition_findings", len(s.Partitions), "pending", s.Pending(), "took", took.Round(time.Millisecond).String(),
		"next", next.UTC().Format(time.RFC3339)}
	if st := s.Step; st != nil {
		head := []any{"step", st.Number, "baseline", st.Baseline}
		// The roles the mode read: the Kafka Streams mode's four, or a
		// comparison's source and sink.
		for _, role := range []string{"input", "repartition", "changelog", "output", "source", "sink"} {
			if n, ok := st.Read[role]; ok {
				head = append(head, "read_"+role, n)
			}
		}
		attrs = append(append(head, "keys_judged", st.KeysJudged), attrs...)
	}
	level := slog.LevelInfo
	if report.Verdict(res) != report.VerdictClean {
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, "step", attrs...)
}

func (w *watcher) setRunning(on bool) {
	w.mu.Lock()
	w.running = on
	w.mu.Unlock()
}

func (w *watcher) completed(res *finding.Result, started time.Time) {
	w.m.Completed(res, started)
	w.mu.Lock()
	w.last, w.lastSuccess, w.lastErr = res, started, ""
	w.mu.Unlock()
}

func (w *watcher) failed(started time.Time, err error) {
	w.m.Failed(started)
	w.mu.Lock()
	w.lastFailure, w.lastErr = started, err.Error()
	w.mu.Unlock()
}

// healthy reports whether the last step succeeded within three intervals
// and says why not. Before the first step completes, watch is healthy
// unless a step failed (the baseline may take longer than three
// intervals).
func (w *watcher) healthy() (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	switch {
	case w.lastFailure.After(w.lastSuccess):
		return false, "the last step failed: " + w.lastErr
	case w.lastSuccess.IsZero():
		return true, "the first step (the baseline) is running"
	case now.Sub(w.lastSuccess) > 3*w.interval:
		return false, fmt.Sprintf("no step succeeded for %s (more than three intervals of %s)", now.Sub(w.lastSuccess).Round(time.Second), w.interval)
	}
	return true, "the last step succeeded at " + w.lastSuccess.UTC().Format(time.RFC3339)
}

// handler serves the endpoints of watch; "/" is the HTML report of the
// last step, linking the other two.
func (w *watcher) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", w.m.Handler())
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		ok, why := w.healthy()
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			rw.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(rw, why)
	})
	last := func(rw http.ResponseWriter, ctype string, write func(io.Writer, *finding.Result) error) {
		w.mu.Lock()
		res := w.last
		w.mu.Unlock()
		if res == nil {
			http.Error(rw, "no step has completed yet", http.StatusServiceUnavailable)
			return
		}
		rw.Header().Set("Content-Type", ctype)
		_ = write(rw, res)
	}
	mux.HandleFunc("GET /report.json", func(rw http.ResponseWriter, _ *http.Request) {
		last(rw, "application/json", report.WriteJSON)
	})
	mux.HandleFunc("GET /loss-report.csv", func(rw http.ResponseWriter, _ *http.Request) {
		last(rw, "text/csv; charset=utf-8", report.WriteResultCSV)
	})
	mux.HandleFunc("GET /{$}", func(rw http.ResponseWriter, _ *http.Request) {
		last(rw, "text/html; charset=utf-8", func(out io.Writer, res *finding.Result) error {
			return report.WriteHTML(out, res, report.HTMLOptions{CSVPath: "loss-report.csv", JSONPath: "report.json", Config: w.config})
		})
	})
	return mux
}

// stepWarnings logs what a step warns about (a permission missing for a
// cross-check, a model warning) and what the reader waits for, one log
// line each: watch has no terminal to print them on. A warning is logged
// once per process, not at every step; waits every time.
type stepWarnings struct {
	log  *slog.Logger
	mu   sync.Mutex
	buf  []byte
	seen map[string]bool
}

func newStepWarnings(log *slog.Logger) *stepWarnings {
	return &stepWarnings{log: log, seen: map[string]bool{}}
}

// Write implements io.Writer: each complete line is logged.
func (s *stepWarnings) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := strings.TrimPrefix(string(s.buf[:i]), "lossaudit: ")
		s.buf = s.buf[i+1:]
		switch {
		case strings.HasPrefix(line, "warning: "):
			if !s.seen[line] {
				s.seen[line] = true
				s.log.Warn(strings.TrimPrefix(line, "warning: "))
			}
		case line != "":
			s.log.Info(line)
		}
	}
}
