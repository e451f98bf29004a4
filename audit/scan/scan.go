// Package scan computes the per-partition statistics printed by
// `lossaudit scan`: a snapshot of each partition's log start offset, last
// stable offset and high watermark, and the committed, aborted and control
// records of [log start, LSO) read with read_committed semantics. After an
// outage it shows stuck LSOs (hanging transactions) and aborted traffic at a
// glance.
package scan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/report"
)

// Reader is what a scan needs from the cluster; *kread.Client has it.
type Reader interface {
	Offsets(ctx context.Context, topic string) (map[int32]kread.Offsets, error)
	OffsetsForTime(ctx context.Context, topic string, t time.Time) (map[int32]int64, error)
	Read(ctx context.Context, ranges []kread.Range, o kread.ReadOptions, fn func(recs []kread.Record) error) (map[kread.TP]kread.Stats, error)
}

// Options tunes a scan.
type Options struct {
	// From and To, when set, restrict the counts to a time window: reading
	// starts at the first offset whose timestamp is at or after From and
	// stops before the first offset whose timestamp is at or after To (as
	// ListOffsets finds them; timestamps need not grow with offsets), and
	// always within [log start, LSO).
	From, To time.Time
	// Check, when set, is called for every committed record; an error
	// counts the record in its partition's DecodeErrors (the scan goes on).
	// It is the hook for `scan --decode`. It may be called concurrently for
	// different partitions.
	Check func(rec *kread.Record) error
	// Group, when set, holds a consumer group's committed offsets (by
	// partition); rows of those partitions show them and the lag behind
	// the LSO, like kafka-consumer-groups --describe.
	Group map[kread.TP]int64
	// Counter, when set, gets the total number of offsets to read once the
	// snapshot is taken, then the offsets read as the scan goes;
	// *progress.Phase has these methods.
	Counter Counter
}

// Counter counts work done; safe for concurrent use.
type Counter interface {
	SetTotal(total int64)
	Add(n, b int64)
}

// Row is the scan result of one partition.
type Row struct {
	Topic         string
	Partition     int32
	LogStart      int64
	LSO           int64
	HighWatermark int64
	// From and To are the offsets read, [From, To): [LogStart, LSO)
	// unless a time window narrowed them.
	From, To int64
	// Committed, Aborted and Control count the records of [From, To).
	Committed, Aborted, Control int64
	// DecodeErrors counts committed records Options.Check rejected.
	DecodeErrors int64
	// FirstTS and LastTS are the timestamps (Unix ms) of the first and last
	// committed records; valid only when Committed > 0.
	FirstTS, LastTS int64
	// Gaps counts offsets the log start passed while the scan ran.
	Gaps int64
	// Decode is what `scan --decode` found; nil without --decode.
	Decode *Decoding
	// ReadTo is the first offset not read; below LSO only if the log start
	// or a truncation interfered.
	ReadTo int64
	// GroupOffset is the group's committed offset (Options.Group) when
	// HasGroup; Lag is LSO - GroupOffset.
	GroupOffset int64
	HasGroup    bool
}

// Lag returns how far the group's committed offset is behind the LSO.
func (r Row) Lag() int64 { return max(0, r.LSO-r.GroupOffset) }

// OpenTxn reports whether a transaction holds the LSO below the high
// watermark.
func (r Row) OpenTxn() bool { return r.LSO < r.HighWatermark }

// Run snapshots and reads every partition of topics, in one concurrent
// read. Rows come in the order of topics, partitions ascending.
func Run(ctx context.Context, rd Reader, topics []string, o Options) ([]Row, error) {
	var rows []Row
	var ranges []kread.Range
	decodeErrs := map[kread.TP]*int64{}
	for _, t := range topics {
		offs, err := rd.Offsets(ctx, t)
		if err != nil {
			return nil, err
		}
		parts := make([]int32, 0, len(offs))
		for p := range offs {
			parts = append(parts, p)
		}
		slices.Sort(parts)
		var fromOffs, toOffs map[int32]int64
		if !o.From.IsZero() {
			if fromOffs, err = rd.OffsetsForTime(ctx, t, o.From); err != nil {
				return nil, err
			}
		}
		if !o.To.IsZero() {
			if toOffs, err = rd.OffsetsForTime(ctx, t, o.To); err != nil {
				return nil, err
			}
		}
		for _, p := range parts {
			off := offs[p]
			from, to := off.LogStart, off.LSO
			if f, ok := fromOffs[p]; ok && f > from {
				from = f
			}
			if e, ok := toOffs[p]; ok && e < to {
				to = e
			}
			from = min(from, to)
			row := Row{Topic: t, Partition: p, LogStart: off.LogStart, LSO: off.LSO, HighWatermark: off.HighWatermark, From: from, To: to}
			row.GroupOffset, row.HasGroup = o.Group[kread.TP{Topic: t, Partition: p}]
			rows = append(rows, row)
			ranges = append(ranges, kread.Range{Topic: t, Partition: p, From: from, To: to})
			decodeErrs[kread.TP{Topic: t, Partition: p}] = new(int64)
		}
	}
	// decodeErrs and done are not modified during Read; each counter is
	// written only by its own partition's callbacks, which never run
	// concurrently.
	var progress func(tp kread.TP, next int64)
	if o.Counter != nil {
		done := make(map[kread.TP]*int64, len(ranges))
		var total int64
		for _, r := range ranges {
			from := r.From
			done[kread.TP{Topic: r.Topic, Partition: r.Partition}] = &from
			total += r.To - r.From
		}
		o.Counter.SetTotal(total)
		progress = func(tp kread.TP, next int64) {
			last := done[tp]
			o.Counter.Add(next-*last, 0)
			*last = next
		}
	}
	fn := func([]kread.Record) error { return nil }
	if o.Check != nil {
		fn = func(recs []kread.Record) error {
			for i := range recs {
				if err := o.Check(&recs[i]); err != nil {
					*decodeErrs[kread.TP{Topic: recs[i].Topic, Partition: recs[i].Partition}]++
				}
			}
			return nil
		}
	}
	stats, err := rd.Read(ctx, ranges, kread.ReadOptions{Progress: progress}, fn)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		r := &rows[i]
		tp := kread.TP{Topic: r.Topic, Partition: r.Partition}
		s := stats[tp]
		r.Committed, r.Aborted, r.Control = s.Committed, s.Aborted, s.Control
		r.FirstTS, r.LastTS, r.Gaps, r.ReadTo = s.FirstTS, s.LastTS, s.Gaps, s.Next
		r.DecodeErrors = *decodeErrs[tp]
	}
	return rows, nil
}

// safe escapes a topic name for the terminal.
func safe(s string) string { return report.TerminalSafe(s) }

// FormatTS formats a Unix ms timestamp as RFC 3339 in UTC with
// milliseconds, e.g. 2026-11-29T10:15:02.123Z.
func FormatTS(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// jsonRow is the --json line of one partition.
type jsonRow struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	LogStart      int64  `json:"log_start"`
	LSO           int64  `json:"lso"`
	HighWatermark int64  `json:"high_watermark"`
	From          int64  `json:"from_offset"`
	To            int64  `json:"to_offset"`
	Committed     int64  `json:"committed"`
	Aborted       int64  `json:"aborted"`
	Control       int64  `json:"control"`
	DecodeErrors  int64  `json:"decode_errors"`
	GroupOffset   *int64 `json:"group_offset,omitempty"`
	Lag           *int64 `json:"lag,omitempty"`
	*Decoding
	FirstTS *string `json:"first_ts"`
	LastTS  *string `json:"last_ts"`
}

// WriteJSON writes one JSON object per partition per line. first_ts and
// last_ts are null when the partition has no committed record.
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		j := jsonRow{
			Topic: r.Topic, Partition: r.Partition, LogStart: r.LogStart, LSO: r.LSO, HighWatermark: r.HighWatermark,
			From: r.From, To: r.To, Committed: r.Committed, Aborted: r.Aborted, Control: r.Control, DecodeErrors: r.DecodeErrors,
			Decoding: r.Decode,
		}
		if r.Committed > 0 {
			f, l := FormatTS(r.FirstTS), FormatTS(r.LastTS)
			j.FirstTS, j.LastTS = &f, &l
		}
		if r.HasGroup {
			g, lag := r.GroupOffset, r.Lag()
			j.GroupOffset, j.Lag = &g, &lag
		}
		if err := enc.Encode(j); err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
	}
	return nil
}

// WriteTable writes an aligned table, one line per partition, partitions
// whose LSO is below the high watermark flagged "open txn", then a summary
// line. FROM and TO columns appear when a time window narrowed any range.
func WriteTable(w io.Writer, rows []Row) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	windowed, grouped := false, false
	for _, r := range rows {
		windowed = windowed || r.From != r.LogStart || r.To != r.LSO
		grouped = grouped || r.HasGroup
	}
	group := func(r Row) string {
		switch {
		case !grouped:
			return ""
		case !r.HasGroup:
			return "-\t-\t"
		}
		return fmt.Sprintf("%d\t%d\t", r.GroupOffset, r.Lag())
	}
	window := func(r Row) string {
		if !windowed {
			return ""
		}
		return fmt.Sprintf("%d\t%d\t", r.From, r.To)
	}
	header := "TOPIC\tPARTITION\tLOG_START\tLSO\tHIGH_WATERMARK\t"
	if windowed {
		header += "FROM\tTO\t"
	}
	if grouped {
		header += "GROUP_OFFSET\tLAG\t"
	}
	fmt.Fprintln(tw, header+"COMMITTED\tABORTED\tCONTROL\tDECODE_ERR\tFIRST_TS\tLAST_TS\tNOTE")
	var open, aborted, committed int64
	for _, r := range rows {
		first, last := "-", "-"
		if r.Committed > 0 {
			first, last = FormatTS(r.FirstTS), FormatTS(r.LastTS)
		}
		var note string
		if r.OpenTxn() {
			note = fmt.Sprintf("open txn (%d offsets above LSO)", r.HighWatermark-r.LSO)
			open++
		}
		if r.Gaps > 0 {
			if note != "" {
				note += "; "
			}
			note += fmt.Sprintf("%d offsets purged during scan", r.Gaps)
		}
		committed += r.Committed
		aborted += r.Aborted
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s%s%d\t%d\t%d\t%d\t%s\t%s\t%s\n",
			safe(r.Topic), r.Partition, r.LogStart, r.LSO, r.HighWatermark, window(r), group(r), r.Committed, r.Aborted, r.Control, r.DecodeErrors, first, last, note)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	for line := range strings.Lines(buf.String()) {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return fmt.Errorf("writing table: %w", err)
		}
	}
	_, err := fmt.Fprintf(w, "\n%d partitions, %d committed and %d aborted records, %d with an open transaction (LSO < high watermark)\n",
		len(rows), committed, aborted, open)
	return err
}
