// Package metrics exposes what lossaudit runs found as Prometheus metrics
// (prometheus/client_golang): served on /metrics by `lossaudit watch`, and
// written once to a file in the text format by `--metrics-file` for
// node_exporter's textfile collector. Labels name stages, kinds, inputs
// and topic roles, never keys, so the number of series is bounded by the
// configuration. The names and their meaning are in docs/reference.md.
package metrics

import (
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/report"
)

// Roles of the topics a step reads, the values of the role label.
var roles = []string{"input", "repartition", "changelog", "output"}

// Set is the metrics of the runs of one process, in their own registry.
// Its methods are safe for concurrent use.
type Set struct {
	reg *prometheus.Registry

	findings          *prometheus.GaugeVec
	partitionFindings *prometheus.GaugeVec
	inconclusive      *prometheus.GaugeVec
	partial           prometheus.Gauge
	audited           *totals
	pending           *prometheus.GaugeVec
	lastSuccess       prometheus.Gauge
	lastRun           prometheus.Gauge
	duration          prometheus.Gauge
	runs              *prometheus.CounterVec
	resolved          prometheus.Counter
	read              *prometheus.CounterVec
	step              prometheus.Gauge
}

// New returns an empty set: every series without labels at 0, the
// labelled ones created by the first observed run.
func New() *Set {
	s := &Set{
		reg: prometheus.NewRegistry(),
		findings: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lossaudit_findings",
			Help: "Key findings open after the last completed run, by stage and kind (rows of the loss report)."}, []string{"stage", "kind"}),
		partitionFindings: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lossaudit_partition_findings",
			Help: "Partition-level findings of the last completed run, by kind."}, []string{"kind"}),
		inconclusive: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lossaudit_inconclusive",
			Help: "Reasons the last completed run could not vouch for an input (or the pipeline), by reason; any non-zero value makes the verdict inconclusive."}, []string{"reason"}),
		partial: prometheus.NewGauge(prometheus.GaugeOpts{Name: "lossaudit_partial",
			Help: "1 when the last completed run withheld findings (a hanging transaction), else 0."}),
		audited: newTotals(prometheus.NewDesc("lossaudit_records_audited_total",
			"Input records audited (processed, in the window, with a value and a selected key), by input: for a reconciliation, since its baseline.",
			[]string{"input"}, nil)),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lossaudit_pending_records",
			Help: "Input records not yet processed by the application (lag, and records still in the repartition topic's unprocessed tail), by input."}, []string{"input"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "lossaudit_last_success_timestamp_seconds",
			Help: "When the last run that completed (reports written, state committed) started, in Unix seconds; 0 before the first."}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "lossaudit_last_run_timestamp_seconds",
			Help: "When the last run, completed or not, started, in Unix seconds."}),
		duration: prometheus.NewGauge(prometheus.GaugeOpts{Name: "lossaudit_step_duration_seconds",
			Help: "How long the last run that completed took, in seconds."}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lossaudit_runs_total",
			Help: "Runs (audits or reconcile steps) by this process, by result: completed or failed."}, []string{"result"}),
		resolved: prometheus.NewCounter(prometheus.CounterOpts{Name: "lossaudit_resolved_findings_total",
			Help: "Findings that reconcile steps of this process found fixed (a later update or a replay arrived)."}),
		read: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lossaudit_records_read_total",
			Help: "Records the reconcile steps of this process read, by the role of the topic (input, repartition, changelog, output)."}, []string{"role"}),
		step: prometheus.NewGauge(prometheus.GaugeOpts{Name: "lossaudit_step_number",
			Help: "The number of the last completed reconcile step since its baseline (1: the baseline); 0 for an audit."}),
	}
	s.reg.MustRegister(s.findings, s.partitionFindings, s.inconclusive, s.partial, s.audited, s.pending, s.lastSuccess,
		s.lastRun, s.duration, s.runs, s.resolved, s.read, s.step)
	for _, r := range []string{"completed", "failed"} {
		s.runs.WithLabelValues(r)
	}
	for _, r := range roles {
		s.read.WithLabelValues(r)
	}
	return s
}

// Completed records a run that completed (its reports were written, a
// step's state committed), started at started.
func (s *Set) Completed(res *finding.Result, started time.Time) {
	sum := &res.Summary
	s.findings.Reset()
	for _, st := range zeroStages(sum) {
		for _, k := range st.Kinds() {
			s.findings.WithLabelValues(string(st), string(k))
		}
	}
	for _, r := range res.Rows {
		s.findings.WithLabelValues(string(r.Stage), string(r.Kind)).Inc()
	}
	s.partitionFindings.Reset()
	for _, k := range finding.PartitionKinds {
		s.partitionFindings.WithLabelValues(string(k))
	}
	for _, p := range sum.Partitions {
		s.partitionFindings.WithLabelValues(string(p.Kind)).Inc()
	}
	s.inconclusive.Reset()
	for _, r := range finding.InconclusiveReasons {
		s.inconclusive.WithLabelValues(string(r))
	}
	for _, in := range sum.Inconclusive {
		s.inconclusive.WithLabelValues(string(in.Reason)).Inc()
	}
	s.partial.Set(0)
	if sum.Partial {
		s.partial.Set(1)
	}
	s.pending.Reset()
	audited := map[string]float64{}
	for name, c := range sum.Inputs {
		if c != nil {
			audited[name] = float64(c.Audited)
			s.pending.WithLabelValues(name).Set(float64(c.Pending))
		}
	}
	s.audited.set(audited)
	s.step.Set(0)
	if st := sum.Step; st != nil {
		s.step.Set(float64(st.Number))
		s.resolved.Add(float64(len(res.Resolved)))
		for r, n := range st.Read {
			s.read.WithLabelValues(r).Add(float64(n))
		}
	}
	s.lastSuccess.Set(seconds(started))
	s.lastRun.Set(seconds(started))
	end := sum.Finished
	if end.IsZero() {
		end = time.Now()
	}
	s.duration.Set(end.Sub(started).Seconds())
	s.runs.WithLabelValues("completed").Inc()
}

// Failed records a run started at started that could not complete; the
// metrics of the last completed run stay as they were.
func (s *Set) Failed(started time.Time) {
	s.lastRun.Set(seconds(started))
	s.runs.WithLabelValues("failed").Inc()
}

func seconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// Handler serves the metrics (GET /metrics).
func (s *Set) Handler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})
}

// Write writes the metrics in the Prometheus text format.
func (s *Set) Write(w io.Writer) error {
	mfs, err := s.reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes the metrics to path atomically (a reader sees the old
// file or the new one, never a part), as node_exporter's textfile
// collector requires; path should end in .prom.
func (s *Set) WriteFile(path string) error {
	return report.WriteFileAtomic(path, s.Write)
}

// totals is a counter by one label whose values the runs report as
// totals (a reconciliation counts since its baseline, across processes),
// rather than increments of this process.
type totals struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	v    map[string]float64
}

func newTotals(d *prometheus.Desc) *totals { return &totals{desc: d, v: map[string]float64{}} }

func (t *totals) set(v map[string]float64) {
	t.mu.Lock()
	t.v = v
	t.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (t *totals) Describe(ch chan<- *prometheus.Desc) { ch <- t.desc }

// Collect implements prometheus.Collector.
func (t *totals) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for label, v := range t.v {
		ch <- prometheus.MustNewConstMetric(t.desc, prometheus.CounterValue, v, label)
	}
}

// zeroStages are the stages whose findings are exported even when zero:
// the Kafka Streams audit's, and every stage the run counted (a
// comparison's sink and ledger), so that a mode's series exist from its
// first run.
func zeroStages(sum *finding.Summary) []finding.Stage {
	out := slices.Clone(finding.Stages)
	for st := range sum.Stages {
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out
}
