package compare

import (
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
)

// stuckSinks runs the stuck_lso detector on the settled sinks (each topic
// once) and says, per pair, whether its sink has a stuck partition.
func stuckSinks(o Options, snap *compareSnapshot) ([]finding.PartitionFinding, []bool) {
	var out []finding.PartitionFinding
	seen := map[string]bool{}
	stuckTopic := map[string]bool{}
	for _, t := range snap.sinks {
		if seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		pf := detect.StuckLSO(t, snap.sinkStartHW[t.Name], o.SettleTimeout, snap.holders[t.Name], snap.holderErr[t.Name])
		stuckTopic[t.Name] = len(pf) > 0
		out = append(out, pf...)
	}
	stuck := make([]bool, len(o.Pairs))
	for x, p := range o.Pairs {
		stuck[x] = stuckTopic[p.Sink]
	}
	finding.SortPartitions(out)
	return out, stuck
}

// pairTotals are one pair's counters as the result reports them.
type pairTotals struct {
	// src are the source's: records read, due, pending, decode errors.
	src                                                          finding.InputCounts
	srcNoIdentity, sinkRecords, sinkNoIdentity, sinkDecodeErrors int64
	identities, unexplained                                      int64
}

// runTotals are the counters of a full run: what its reads and its check
// counted.
func runTotals(col *collector, chk *checked) []pairTotals {
	out := make([]pairTotals, len(col.sources))
	for x := range out {
		src, snk := &col.sources[x], &col.sinks[x]
		out[x] = pairTotals{
			src:           finding.InputCounts{Scanned: src.records.Load(), Audited: src.due.Load(), Pending: src.pending.Load(), DecodeErrors: src.decodeErrors.Load()},
			srcNoIdentity: src.noIdentity.Load(), sinkRecords: snk.records.Load(), sinkNoIdentity: snk.noIdentity.Load(),
			sinkDecodeErrors: snk.decodeErrors.Load(), identities: chk.identities[x], unexplained: chk.unexplained[x],
		}
		if col.o.Stream != nil {
			out[x].src.NullKey, out[x].src.NullValue = col.stream.nullKey[x].Load(), col.stream.nullValue[x].Load()
			out[x].src.Filtered, out[x].src.Uncertain = col.stream.filtered[x].Load(), col.stream.uncertain[x].Load()
		}
	}
	return out
}

// assemble builds the result from what the phases found; totals are the
// pairs' counters (runTotals, or a step's totals since the baseline).
func assemble(o Options, snap *compareSnapshot, col *collector, totals []pairTotals, led *ledgerState, chk *checked, parts []finding.PartitionFinding) *finding.Result {
	cs := &finding.CompareSummary{Match: o.Match, Group: o.Group, Pairs: []finding.CompareCounts{}}
	if o.Group == "" {
		cs.Grace = o.Grace
	}
	s := finding.Summary{
		Inputs:               map[string]*finding.InputCounts{},
		Stages:               map[finding.Stage]*finding.StageCounts{},
		Partitions:           parts,
		Withheld:             chk.withheld,
		Reads:                col.stats.Issues(),
		DecodeErrorsBySchema: col.decode.ByClass,
		DecodeErrorSamples:   col.decode.Samples,
		Sections:             []finding.Section{cs},
		Group:                snap.group,
	}
	sink := &finding.StageCounts{Findings: map[finding.Kind]int64{}}
	if len(o.Pairs) > 0 {
		s.Stages[finding.StageSink] = sink
	}
	key := "compare.grace"
	if o.Group != "" {
		key = "compare.group"
	}
	var scanned int64
	for x, p := range o.Pairs {
		t := &totals[x]
		c := t.src
		scanned += c.Scanned
		s.InputOrder = append(s.InputOrder, p.Name)
		s.Inputs[p.Name] = &c
		cs.Pairs = append(cs.Pairs, finding.CompareCounts{Name: p.Name, Source: p.Source, Sink: p.Sink,
			SourceNoIdentity: t.srcNoIdentity, SinkRecords: t.sinkRecords, SinkNoIdentity: t.sinkNoIdentity,
			SinkDecodeErrors: t.sinkDecodeErrors, Identities: t.identities, Unexplained: t.unexplained})
		sink.KeysChecked += t.identities
		in := finding.Inconclusive{Input: p.Name, Key: key, Group: o.Group, Counts: c}
		sinkBad := finding.InputCounts{Scanned: t.sinkRecords, DecodeErrors: t.sinkDecodeErrors}
		switch {
		case !snap.committed[x]:
			in.Reason = finding.NoCommittedOffsets
		case c.Scanned > 0 && 2*c.DecodeErrors > c.Scanned:
			in.Reason, in.TopError, in.Topic = finding.MostlyUndecodable, col.decode.Top(sourceSlot(x)), p.Source
		case sinkBad.Scanned > 0 && 2*sinkBad.DecodeErrors > sinkBad.Scanned:
			// Copies that do not decode cannot be matched: every record
			// would look missing.
			in.Reason, in.TopError, in.Topic, in.Counts = finding.MostlyUndecodable, col.decode.Top(sinkSlot(x)), p.Sink, sinkBad
		case c.Scanned > 0 && c.Audited == 0:
			in.Reason = finding.NothingAudited
		default:
			continue
		}
		s.Inconclusive = append(s.Inconclusive, in)
	}
	if o.Ledger != nil {
		lc := led.counts
		lc.Verified, lc.Expired, lc.Unsettled = chk.ledger.Verified, chk.ledger.Expired, chk.ledger.Unsettled
		cs.Ledger = &lc
		s.Stages[finding.StageLedger] = &finding.StageCounts{KeysChecked: chk.ledgerIDs, Findings: map[finding.Kind]int64{}}
	}
	if scanned == 0 && o.Ledger == nil {
		s.Inconclusive = append(s.Inconclusive, finding.Inconclusive{Reason: finding.NoRecords, Key: key})
	}
	for _, r := range chk.rows {
		s.Stages[r.Stage].Findings[r.Kind]++
	}
	if chk.withheld > 0 {
		s.Partial, s.PartialReason = true, finding.PartialStuck
	}
	finding.SortRows(chk.rows, s.InputOrder)
	return &finding.Result{Summary: s, Rows: chk.rows}
}
