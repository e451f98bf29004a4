package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// The words of the reports: everything a user reads about a finding is
// written here, from the structured evidence the detectors produce.

// Detail is the CSV `detail` of a row, from its evidence: for a changelog
// row (a *finding.Witness), whether the repartition topic still holds a
// processed copy of the lost update; for a sink row, the copies on both
// sides; for a ledger row, the ledger line and what the topic holds. A
// mode's new evidence type gets its case here.
func Detail(r *finding.Row) string {
	switch e := r.Evidence.(type) {
	case *finding.SinkEvidence:
		return sinkDetail(r, e)
	case *finding.LedgerEvidence:
		return ledgerDetail(r, e)
	case *finding.CountEvidence:
		return fmt.Sprintf("changelog %s[%d]@%d counts %d, but %d records of the key were processed: %s lost", e.Changelog, e.Partition, e.Offset, e.Count, e.Processed, updates(e.Lost()))
	case *finding.TableEvidence:
		return tableDetail(e)
	case *finding.Witness:
		if e.Seen {
			return fmt.Sprintf("seen in repartition topic %s[%d]@%d, lost before the store", e.Topic, e.Partition, e.Offset)
		}
		return fmt.Sprintf("repartition topic %s no longer holds it (purged) or never did", e.Topic)
	}
	return ""
}

// tableDetail says what a table source's changelog ends with instead of
// the key's last processed record.
func tableDetail(e *finding.TableEvidence) string {
	if !e.Has {
		return fmt.Sprintf("changelog %s[%d] holds nothing for the key, not the input's last record of it by offset nor a later one: lost before the table", e.Changelog, e.Partition)
	}
	what := "a value"
	if e.Tombstone {
		what = "a tombstone"
	}
	return fmt.Sprintf("changelog %s[%d]@%d ends the key with %s at %s, the put of the key's earlier input record at offset %d, not of its last one nor a later one: lost before the table", e.Changelog, e.Partition, e.Offset, what, FormatTS(e.TS), e.InputOffset)
}

// updates is "1 update" or "n updates".
func updates(n int64) string {
	if n == 1 {
		return "1 update"
	}
	return fmt.Sprintf("%d updates", n)
}

// Evidence returns the text and the offsets that prove a partition finding.
func Evidence(p *finding.PartitionFinding) (string, map[string]int64) {
	runAt := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch e := p.Evidence.(type) {
	case *finding.PurgeEvidence:
		return fmt.Sprintf("log start offset %d is above the committed offset %d of group %s: %d records were deleted before the application processed them (KAFKA-17635)",
				e.LogStart, e.Committed, e.Group, e.LogStart-e.Committed),
			map[string]int64{"log_start": e.LogStart, "committed": e.Committed}
	case *finding.StuckEvidence:
		text := fmt.Sprintf("last stable offset %d stayed below %d (the high watermark read after the repartition tails) for %s: a transaction is hanging; findings for keys of this partition are withheld",
			e.LSO, e.StartHighWatermark, e.Waited)
		offs := map[string]int64{"lso": e.LSO, "high_watermark_at_start": e.StartHighWatermark, "high_watermark": e.HighWatermark}
		switch h := e.Holder; {
		case h != nil:
			who := fmt.Sprintf("transactional id %q, %s", h.TransactionalID, h.State)
			if h.TransactionalID == "" {
				who = "transactional id not listed: lossaudit's principal lacks DESCRIBE on it, or no coordinator lists it"
			}
			text += fmt.Sprintf("; it is held by producer id %d (epoch %d, %s), whose transaction started at offset %d: confirm with kafka-transactions.sh --bootstrap-server HOST:PORT find-hanging --broker-id %d and, if it is hanging, abort it with kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic %s --partition %d --start-offset %d",
				h.ProducerID, h.ProducerEpoch, who, h.StartOffset, h.Leader, p.Topic, p.Partition, h.StartOffset)
			offs["producer_id"], offs["txn_start_offset"] = h.ProducerID, h.StartOffset
		case e.HolderError != "":
			text += fmt.Sprintf("; the transaction holding it could not be named (%s)", e.HolderError)
		}
		return text, offs
	case *finding.TruncationEvidence:
		return fmt.Sprintf("high watermark moved back from %d (run at %s) to %d: %d acknowledged offsets are gone (unclean leader election, a last-replica-standing shutdown, or the topic was recreated)",
				e.PrevHighWatermark, runAt(e.PrevRun), e.HighWatermark, e.PrevHighWatermark-e.HighWatermark),
			map[string]int64{"previous_high_watermark": e.PrevHighWatermark, "high_watermark": e.HighWatermark}
	case *finding.ResetEvidence:
		if !e.HasCommitted {
			return fmt.Sprintf("group %s had committed offset %d (run at %s) and now has none: its offsets were deleted or expired, and it will restart from auto.offset.reset",
					e.Group, e.PrevCommitted, runAt(e.PrevRun)),
				map[string]int64{"previous_committed": e.PrevCommitted}
		}
		return fmt.Sprintf("committed offset of group %s moved back from %d (run at %s) to %d: records were (or will be) processed again",
				e.Group, e.PrevCommitted, runAt(e.PrevRun), e.Committed),
			map[string]int64{"previous_committed": e.PrevCommitted, "committed": e.Committed}
	case *finding.PoisonEvidence:
		return fmt.Sprintf("the committed offset of group %s points at this record, which does not decode (%s): an application that stops on deserialization errors (LogAndFailExceptionHandler) is stuck here",
				e.Group, e.Error),
			map[string]int64{"offset": e.Offset}
	case *finding.OutOfRangeEvidence:
		if e.Committed > e.HighWatermark {
			return fmt.Sprintf("committed offset %d of group %s is above the high watermark %d: the log was truncated (unclean leader election, a last-replica-standing shutdown) or the topic recreated; %d processed offsets are gone, and new records up to the committed offset will be skipped",
					e.Committed, e.Group, e.HighWatermark, e.Committed-e.HighWatermark),
				map[string]int64{"committed": e.Committed, "log_start": e.LogStart, "high_watermark": e.HighWatermark}
		}
		return fmt.Sprintf("committed offset %d of group %s is below the log start offset %d: %d offsets were deleted (retention, DeleteRecords, a recreated topic) before the application processed them; it will restart from auto.offset.reset",
				e.Committed, e.Group, e.LogStart, e.LogStart-e.Committed),
			map[string]int64{"committed": e.Committed, "log_start": e.LogStart, "high_watermark": e.HighWatermark}
	case *finding.UnprocessedEvidence:
		return fmt.Sprintf("group %s has committed offsets on other partitions of the topic but none on this one, which holds %d offsets of records since %s (older than audit.unprocessed_after, %s): the application never processed them (a partition added while it ran with auto.offset.reset=latest, or never assigned)",
				e.Group, e.LSO-e.LogStart, formatTime(time.UnixMilli(e.FirstTimestamp)), e.Age),
			map[string]int64{"log_start": e.LogStart, "lso": e.LSO}
	}
	return "", nil
}

// PartialReason says in words why a run is partial.
func PartialReason(s *finding.Summary) string {
	if !s.Partial {
		return ""
	}
	switch s.PartialReason {
	case finding.PartialStuck:
		return "some changelog or output partitions have a hanging transaction (stuck_lso); findings depending on them are withheld"
	}
	return string(s.PartialReason)
}

// InconclusiveText says in words why the run summarised by s cannot vouch
// for an input (or for itself), and what to do about it: in the words of
// the mode that produced s where it has its own, else in the audit's.
func InconclusiveText(s *finding.Summary, i *finding.Inconclusive) string {
	if t := modeOf(s).inconclusiveText(i); t != "" {
		return t
	}
	c := i.Counts
	switch i.Reason {
	case finding.NoCommittedOffsets:
		return fmt.Sprintf("input %s: group %s has no committed offset on its topic, so no record counts as processed (%s records pending): check pipeline.application_id (list the groups with kafka-consumer-groups.sh --bootstrap-server HOST:PORT --list); committed offsets of a group without members expire after offsets.retention.minutes",
			i.Input, i.Group, Thousands(c.Pending))
	case finding.MostlyUndecodable:
		processed := c.Audited + c.DecodeErrors + c.NullKey + c.NullValue
		s := fmt.Sprintf("input %s: %s of %s processed records could not be decoded or their key selected", i.Input, Thousands(c.DecodeErrors), Thousands(processed))
		if i.TopError != "" {
			s += " (mostly " + i.TopError + ")"
		}
		if i.Field != "" {
			s += fmt.Sprintf(": check the field path %q", i.Field)
			if len(i.Nearest) > 0 {
				s += " (the writer schema has " + strings.Join(quoteAll(i.Nearest), ", ") + ")"
			}
			s += " and the schema sources"
		} else {
			s += ": check the schema sources and the input's key_format"
		}
		return s
	case finding.NothingAudited:
		s := fmt.Sprintf("input %s: none of its %s records could be audited (%s pending, %s dropped by design, %s undecodable, %s outside the window",
			i.Input, Thousands(c.Scanned), Thousands(c.Pending), Thousands(c.NullKey+c.NullValue+c.Filtered), Thousands(c.DecodeErrors), Thousands(c.OutsideWindow))
		if c.Uncertain > 0 {
			s += fmt.Sprintf(", %s uncertain: a declared predicate or re-key could not be evaluated on them; check pipeline.nodes[].predicate and the input's rekey", Thousands(c.Uncertain))
		}
		return s + ")"
	case finding.EmptyWindow:
		s := fmt.Sprintf("no input record falls inside the window %s", windowText(i.Window))
		if !i.DataFrom.IsZero() {
			s += fmt.Sprintf("; the inputs' records span %s to %s", formatTime(i.DataFrom), formatTime(i.DataTo))
		} else {
			s += "; the inputs hold no record"
		}
		return s
	case finding.NoRecords:
		return "no input holds any record: nothing to audit"
	}
	return string(i.Reason)
}

func windowText(w finding.Window) string {
	from, to := "the beginning", "now"
	if !w.From.IsZero() {
		from = formatTime(w.From)
	}
	if !w.To.IsZero() {
		to = formatTime(w.To)
	}
	return from + " to " + to
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// ReadIssueText says what reading one partition met.
func ReadIssueText(r *finding.ReadIssue) string {
	var parts []string
	if r.Gaps > 0 {
		parts = append(parts, fmt.Sprintf("%s offsets skipped (the log start passed them while reading)", Thousands(r.Gaps)))
	}
	if r.Retries > 0 {
		parts = append(parts, fmt.Sprintf("%s fetches retried", Thousands(r.Retries)))
	}
	return strings.Join(parts, ", ")
}

// Timing renders a phase duration as the reports show it (milliseconds).
func Timing(d time.Duration) string { return d.Round(time.Millisecond).String() }

// StepText says which step of a reconciliation a result is.
func StepText(st *finding.Step) string {
	if st.Baseline {
		full := "a full audit"
		if comparesCopies(st) {
			full = "a full comparison"
		}
		return fmt.Sprintf("Reconcile step 1: the baseline (%s), at %s; later steps read only what is new", full, formatTime(st.BaselineAt))
	}
	return fmt.Sprintf("Reconcile step %s: incremental since the step at %s (baseline at %s)",
		Thousands(st.Number), formatTime(st.Previous), formatTime(st.BaselineAt))
}

// GroupText describes the application's group as its coordinator did:
// "lossaudit-tb: streams group, Stable, 2 members (StreamsGroupDescribe v0)".
func GroupText(g *finding.Group) string {
	switch {
	case g.Error != "":
		return fmt.Sprintf("%s: could not be described (%s); no partition is judged stopped on it", g.ID, g.Error)
	case g.Type == "":
		return fmt.Sprintf("%s: the coordinator does not know the group (%s)", g.ID, g.Via)
	}
	members := "members unknown"
	if g.Members >= 0 {
		members = plural(int64(g.Members), "member", "members")
	}
	return fmt.Sprintf("%s: %s group, %s, %s (%s)", g.ID, g.Type, g.State, members, g.Via)
}

// comparesCopies says whether st is a step of a comparison's
// reconciliation (it reads sources and sinks), whose state is kept per
// record identity and whose counters are the pairs'.
func comparesCopies(st *finding.Step) bool {
	_, ok := st.Read["source"]
	return ok
}
