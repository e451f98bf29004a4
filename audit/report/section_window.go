package report

import (
	"fmt"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// windowView renders a windowed aggregation's section (finding.Windows)
// in the counts (the summary and the HTML report's Counts card) and in the
// JSON block "windows".
type windowView struct{ w *finding.Windows }

// counts is the table of the windowed input's records by place.
func (v windowView) counts(*finding.Summary) []countsBlock {
	w := v.w
	t := table{header: []string{"INPUT", "ON TIME", "LATE OR UNCERTAIN", "EXPIRED"}, right: []bool{false, true, true, true}}
	t.add(safe(w.Input), Thousands(w.OnTime), Thousands(w.LateOrUncertain), Thousands(w.Expired))
	kind := fmt.Sprintf("tumbling window %s", msText(w.Size))
	if w.Advance > 0 && w.Advance != w.Size {
		kind = fmt.Sprintf("hopping windows of %s every %s", msText(w.Size), msText(w.Advance))
	}
	notes := []string{fmt.Sprintf("%s, grace %s, read from %s; counted per record and window: a processed record is checked in a window only when certainly on time there (the window ends after its partition's greatest timestamp minus grace); late or uncertain ones may have been dropped by design and are never reported",
		kind, msText(w.Grace), safe(w.Repartition))}
	if w.Final {
		notes = append(notes, fmt.Sprintf("emitted final (suppress(untilWindowCloses)): the output is checked for each window certainly closed; pending, not checked: %s not certainly closed, %s closed and still held by the suppress buffer; %s expired",
			plural(w.FinalOpen, "window", "windows"), plural(w.FinalBuffered, "window", "windows"), plural(w.FinalExpired, "window", "windows")))
	}
	if w.UnknownPartitions > 0 {
		notes = append(notes, fmt.Sprintf("%s of %s not read from offset 0 (purged): stream time unknown, none of their records checked (set repartition.purge.interval.ms high, or keep the repartition topic's records)",
			plural(w.UnknownPartitions, "partition", "partitions"), safe(w.Repartition)))
	}
	if w.Expired > 0 {
		notes = append(notes, "expired: older than the changelog's or the output's retention.ms; their windows may have been deleted")
	}
	if w.BadTimestamp > 0 {
		notes = append(notes, fmt.Sprintf("negative timestamps, not checked: %s", plural(w.BadTimestamp, "record", "records")))
	}
	if w.BadChangelogKeys+w.BadOutputKeys > 0 {
		notes = append(notes, fmt.Sprintf("keys too short for a window, skipped: %s in the changelog, %s in the output", Thousands(w.BadChangelogKeys), Thousands(w.BadOutputKeys)))
	}
	return []countsBlock{{title: "Windows", htmlTitle: "Windowed records", table: &t, notes: notes}}
}

// msText renders milliseconds as a short duration (1m, 30s).
func msText(n int64) string { return shortDuration(time.Duration(n) * time.Millisecond) }

type jsonWindows struct {
	Input             string `json:"input"`
	Repartition       string `json:"repartition_topic"`
	SizeMS            int64  `json:"size_ms"`
	AdvanceMS         int64  `json:"advance_ms"`
	GraceMS           int64  `json:"grace_ms"`
	OnTime            int64  `json:"on_time"`
	LateOrUncertain   int64  `json:"late_or_uncertain"`
	Expired           int64  `json:"expired"`
	BadTimestamp      int64  `json:"bad_timestamp"`
	UnknownPartitions int64  `json:"unknown_partitions"`
	BadChangelogKeys  int64  `json:"bad_changelog_keys"`
	BadOutputKeys     int64  `json:"bad_output_keys"`
	// Final is set for windows emitted final (suppress(untilWindowCloses)).
	Final *jsonFinal `json:"final,omitempty"`
}

// jsonFinal counts the windows of an aggregation emitted final that the
// output rule did not check.
type jsonFinal struct {
	Open     int64 `json:"open"`
	Buffered int64 `json:"buffered"`
	Expired  int64 `json:"expired"`
}

// jsonBlock is the "windows" block.
func (v windowView) jsonBlock() any {
	w := v.w
	j := &jsonWindows{Input: w.Input, Repartition: w.Repartition, SizeMS: w.Size, AdvanceMS: w.Advance, GraceMS: w.Grace, OnTime: w.OnTime,
		LateOrUncertain: w.LateOrUncertain, Expired: w.Expired, BadTimestamp: w.BadTimestamp, UnknownPartitions: w.UnknownPartitions,
		BadChangelogKeys: w.BadChangelogKeys, BadOutputKeys: w.BadOutputKeys}
	if w.Final {
		j.Final = &jsonFinal{Open: w.FinalOpen, Buffered: w.FinalBuffered, Expired: w.FinalExpired}
	}
	return j
}
