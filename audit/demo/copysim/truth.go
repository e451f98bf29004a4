package copysim

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
)

// Row is a finding the comparison must report: its kind, stage, input,
// the record it names and that record's key.
type Row struct {
	Kind      finding.Kind
	Stage     finding.Stage
	Input     string
	Topic     string
	Partition int32
	Offset    int64
	Key       string
}

func (r Row) String() string {
	return fmt.Sprintf("%s %s %s %s[%d]@%d key=%q", r.Kind, r.Stage, r.Input, r.Topic, r.Partition, r.Offset, r.Key)
}

// PairTruth are the counters one pair must show.
type PairTruth struct {
	// Scanned source records, Due and Pending identified ones, and
	// source records without an identity.
	Scanned, Due, Pending, NoIdentity int64
	// SinkRecords, SinkNoIdentity; Unexplained sink records of identities
	// the source does not hold.
	SinkRecords, SinkNoIdentity, Unexplained int64
}

// Truth is what a simulated run did and what lossaudit compare must
// report about it.
type Truth struct {
	Scenario
	// Prefix starts every topic name of the run.
	Prefix string
	// LedgerPath is the ledger's file ("" without a ledger).
	LedgerPath string
	// Rows are the findings, sorted.
	Rows  []Row
	Pairs []PairTruth
	// Ledger counters: sends, acknowledged, failed, verified, expired,
	// other lines.
	LedgerLines, LedgerAcked, LedgerFailed, LedgerVerified, LedgerExpired, LedgerSkipped int64
	// Injected counts what each fault did, for the story.
	Injected map[string]int
}

// identity is a record's identity under the match, as text for grouping.
func identity(match string, key, value, id []byte) string {
	q := func(b []byte) string {
		if b == nil {
			return "-"
		}
		return fmt.Sprintf("%q", b)
	}
	switch match {
	case MatchKey:
		return q(key)
	case MatchHeader:
		return q(id)
	}
	return q(key) + "/" + q(value)
}

func coordLess(ap int32, ao int64, bp int32, bo int64) int {
	if c := cmp.Compare(ap, bp); c != 0 {
		return c
	}
	return cmp.Compare(ao, bo)
}

// truth derives what the comparison must find from what was written:
// per identity, the due source records beyond the sink's copies are
// missing, more copies than source records are duplicated, copies of
// identities no source record holds unexpected (when asked for); the
// ledger's injected lines prove what their kind says.
func (w *world) truth(t *Truth) {
	sc := w.sc
	t.Injected = map[string]int{}
	for x, ps := range sc.Pairs {
		var pt PairTruth
		type group struct {
			due, all []*rec
			copies   []*copyRec
		}
		groups := map[string]*group{}
		get := func(id string) *group {
			g := groups[id]
			if g == nil {
				g = &group{}
				groups[id] = g
			}
			return g
		}
		for _, rc := range w.sources[x] {
			if rc.deleted {
				continue
			}
			pt.Scanned++
			if !identified(sc.Match, rc) {
				pt.NoIdentity++
				continue
			}
			g := get(identity(sc.Match, rc.key, rc.value, rc.id))
			g.all = append(g.all, rc)
			if rc.pending {
				pt.Pending++
			} else {
				pt.Due++
				g.due = append(g.due, rc)
			}
			switch {
			case rc.copies == 0 && !rc.pending:
				t.Injected["copies lost"]++
			case rc.copies > 1:
				t.Injected["records copied more than once"]++
			}
		}
		for _, c := range w.sinks[x] {
			pt.SinkRecords++
			if !identified(sc.Match, &rec{key: c.key, id: c.id}) {
				pt.SinkNoIdentity++
				continue
			}
			g := get(identity(sc.Match, c.key, c.val, c.id))
			g.copies = append(g.copies, c)
		}
		for _, g := range groups {
			slices.SortFunc(g.due, func(a, b *rec) int { return coordLess(a.partition, a.offset, b.partition, b.offset) })
			slices.SortFunc(g.all, func(a, b *rec) int { return coordLess(a.partition, a.offset, b.partition, b.offset) })
			slices.SortFunc(g.copies, func(a, b *copyRec) int { return coordLess(a.partition, a.offset, b.partition, b.offset) })
			s := len(g.copies)
			for i := s; i < len(g.due); i++ {
				rc := g.due[i]
				t.Rows = append(t.Rows, Row{finding.Missing, finding.StageSink, ps.Name, w.topic(ps.Source), rc.partition, rc.offset, string(rc.key)})
			}
			switch {
			case len(g.all) == 0:
				pt.Unexplained += int64(s)
				if sc.ReportUnexpected && s > 0 {
					c := g.copies[0]
					t.Rows = append(t.Rows, Row{finding.Unexpected, finding.StageSink, ps.Name, w.topic(ps.Sink), c.partition, c.offset, string(c.key)})
				}
			case s > len(g.all):
				rc := g.all[0]
				t.Rows = append(t.Rows, Row{finding.Duplicated, finding.StageSink, ps.Name, w.topic(ps.Source), rc.partition, rc.offset, string(rc.key)})
			}
		}
		t.Pairs = append(t.Pairs, pt)
	}
	if sc.Ledger != nil {
		w.ledgerTruth(t)
	}
	slices.SortFunc(t.Rows, func(a, b Row) int { return strings.Compare(a.String(), b.String()) })
}

func (w *world) ledgerTruth(t *Truth) {
	ps := w.sc.Pairs[0]
	topic := w.topic(ps.Source)
	t.LedgerSkipped = w.skipped
	for _, l := range w.lines {
		t.LedgerLines++
		key := string(l.key)
		if w.sc.Match == MatchHeader {
			key = "" // id lines name no key
		}
		switch {
		case l.acked:
			t.LedgerAcked++
		default:
			t.LedgerFailed++
		}
		switch {
		case l.kind == "acked_missing":
			t.Rows = append(t.Rows, Row{finding.AckedMissing, finding.StageLedger, ps.Name, topic, l.partition, l.offset, key})
		case l.kind == "unacked_present":
			t.Rows = append(t.Rows, Row{finding.UnackedPresent, finding.StageLedger, ps.Name, topic, l.partition, l.offset, key})
		case l.kind == "unacked_missing":
			t.Rows = append(t.Rows, Row{finding.UnackedMissing, finding.StageLedger, ps.Name, topic, -1, -1, key})
		case l.partition == 0 && l.offset < w.logStart0:
			t.LedgerExpired++
		default:
			t.LedgerVerified++
		}
		if l.kind != "" {
			t.Injected["ledger lines: "+l.kind]++
		}
	}
	for _, rc := range w.sources[0] {
		if rc.noLine && !rc.deleted {
			t.Rows = append(t.Rows, Row{finding.Duplicated, finding.StageLedger, ps.Name, topic, rc.partition, rc.offset, string(rc.key)})
			t.Injected["ledger: records written twice, acknowledged once"]++
		}
	}
	t.Injected["ledger lines: expired"] = int(t.LedgerExpired)
}

// Config returns the configuration that compares the run's pairs (and
// checks its ledger) on the cluster at brokers, with the index in
// storeDir.
func (t *Truth) Config(brokers []string, storeDir string) *config.Config {
	c := &config.Config{
		Kafka: config.Kafka{Brokers: brokers, FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576,
			Concurrency: 8, Timeout: 30 * time.Second},
		Store: config.Store{Dir: storeDir},
		Audit: config.Audit{SettleTimeout: 10 * time.Second},
		Compare: config.Compare{Match: t.Match, Group: t.Group, Grace: config.DefaultGrace, Ledger: t.LedgerPath,
			ReportUnexpected: t.ReportUnexpected},
	}
	for _, p := range t.Scenario.Pairs {
		c.Compare.Pairs = append(c.Compare.Pairs, config.Pair{Name: p.Name, Source: t.Prefix + p.Source, Sink: t.Prefix + p.Sink})
	}
	return c
}

// Diff lists every way res differs from the truth: rows missing or extra,
// and counters that disagree. Empty means the comparison found exactly
// what was injected.
func (t *Truth) Diff(res *finding.Result) []string {
	var out []string
	got := map[string]int{}
	for _, r := range res.Rows {
		got[Row{r.Kind, r.Stage, r.Input, r.Topic, r.Partition, r.Offset, string(r.Key)}.String()]++
	}
	want := map[string]int{}
	for _, r := range t.Rows {
		want[r.String()]++
	}
	for _, k := range sortedKeys(want) {
		if got[k] < want[k] {
			out = append(out, "not reported: "+k)
		}
	}
	for _, k := range sortedKeys(got) {
		if got[k] > want[k] {
			out = append(out, "reported but not injected: "+k)
		}
	}
	s := &res.Summary
	if s.Compare == nil {
		return append(out, "the result has no comparison summary")
	}
	for x, ps := range t.Scenario.Pairs {
		pt := t.Pairs[x]
		in := s.Inputs[ps.Name]
		if in == nil || x >= len(s.Compare.Pairs) {
			out = append(out, "no counters for pair "+ps.Name)
			continue
		}
		cc := s.Compare.Pairs[x]
		check := func(what string, got, want int64) {
			if got != want {
				out = append(out, fmt.Sprintf("pair %s: %s %d, want %d", ps.Name, what, got, want))
			}
		}
		check("source records", in.Scanned, pt.Scanned)
		check("due", in.Audited, pt.Due)
		check("pending", in.Pending, pt.Pending)
		check("source records without identity", cc.SourceNoIdentity, pt.NoIdentity)
		check("sink records", cc.SinkRecords, pt.SinkRecords)
		check("sink records without identity", cc.SinkNoIdentity, pt.SinkNoIdentity)
		check("sink records with no source record", cc.Unexplained, pt.Unexplained)
	}
	if t.LedgerPath != "" {
		l := s.Compare.Ledger
		if l == nil {
			return append(out, "the result has no ledger counters")
		}
		check := func(what string, got, want int64) {
			if got != want {
				out = append(out, fmt.Sprintf("ledger: %s %d, want %d", what, got, want))
			}
		}
		check("sends", l.Lines, t.LedgerLines)
		check("acknowledged", l.Acked, t.LedgerAcked)
		check("failed", l.Failed, t.LedgerFailed)
		check("verified", l.Verified, t.LedgerVerified)
		check("expired", l.Expired, t.LedgerExpired)
		check("other lines", l.Skipped, t.LedgerSkipped)
	}
	if s.Partial || len(s.Inconclusive) > 0 {
		out = append(out, fmt.Sprintf("the comparison is partial (%v) or inconclusive (%d reasons)", s.Partial, len(s.Inconclusive)))
	}
	return out
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// WriteStory tells what the simulation did, for the demo.
func (t *Truth) WriteStory(w io.Writer) error {
	var b strings.Builder
	for x, p := range t.Scenario.Pairs {
		pt := t.Pairs[x]
		fmt.Fprintf(&b, "- %s: %d records in %s (%d partitions), copied to %s; %d due, %d still on their way\n",
			p.Name, pt.Scanned, t.Prefix+p.Source, p.Partitions, t.Prefix+p.Sink, pt.Due, pt.Pending)
	}
	for _, k := range sortedKeys(t.Injected) {
		if t.Injected[k] > 0 {
			fmt.Fprintf(&b, "- injected: %d %s\n", t.Injected[k], k)
		}
	}
	if t.LedgerPath != "" {
		fmt.Fprintf(&b, "- the producer of %s kept a ledger of %d sends: %s\n", t.Prefix+t.Scenario.Pairs[0].Source, t.LedgerLines, t.LedgerPath)
	}
	fmt.Fprintf(&b, "- so a comparison must report these %d records, and nothing else:\n", len(t.Rows))
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "    %-16s %-7s %s[%d]@%d\n", r.Kind, r.Stage, r.Topic, r.Partition, r.Offset)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
