package report

import (
	"fmt"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// deadLetterView renders the dead-letter section (finding.DeadLetters):
// the input records the application dropped on purpose, in the counts (the
// summary and the HTML report's Counts card) and in the JSON block
// "dead_lettered". It is informational: the verdict does not count it.
type deadLetterView struct{ dl *finding.DeadLetters }

// maxSummaryDeadLettered bounds the records the summary lists; the JSON
// report lists them all (up to finding.MaxDeadLettered).
const maxSummaryDeadLettered = 20

// counts are the per-input counts and the first dead-lettered records.
func (v deadLetterView) counts(*finding.Summary) []countsBlock {
	dl := v.dl
	per := table{header: []string{"INPUT", "DEAD-LETTERED"}, right: []bool{false, true}}
	var total int64
	for _, in := range dl.ByInput {
		per.add(safe(in.Input), Thousands(in.Count))
		total += in.Count
	}
	notes := []string{fmt.Sprintf("dropped on purpose: the input records the dead-letter topic %s names (read committed, %s), not audited and not loss",
		safe(dl.Topic), plural(dl.Read, "record", "records"))}
	if dl.Missing {
		notes = []string{fmt.Sprintf("the dead-letter topic %s does not exist: the application dead-lettered nothing", safe(dl.Topic))}
	}
	if dl.Unreadable > 0 {
		notes = append(notes, fmt.Sprintf("unreadable, exempting nothing (no __streams.errors.topic, partition and offset headers): %s", plural(dl.Unreadable, "dead-letter record", "dead-letter records")))
	}
	if dl.Unmatched > 0 {
		notes = append(notes, fmt.Sprintf("unmatched, naming no audited and processed input record (another topic, not processed yet, outside the window, or a repartition copy of no input record): %s", plural(dl.Unmatched, "dead-letter record", "dead-letter records")))
	}
	blocks := []countsBlock{{title: "Dead-lettered", htmlTitle: "Dead-lettered input records", table: &per, notes: notes}}
	if total == 0 {
		return blocks
	}
	recs := table{header: []string{"INPUT", "RECORD", "TIMESTAMP", "VIA", "DEAD-LETTER", "EXCEPTION", "MESSAGE"}, right: make([]bool, 7)}
	for i, r := range dl.Records {
		if i == maxSummaryDeadLettered {
			break
		}
		via := ""
		if r.ViaTopic != "" {
			via = fmt.Sprintf("%s[%d]@%d", safe(r.ViaTopic), r.ViaPartition, r.ViaOffset)
		}
		recs.add(safe(r.Input), fmt.Sprintf("%s[%d]@%d", safe(r.Topic), r.Partition, r.Offset), FormatTS(r.Timestamp), via,
			fmt.Sprintf("[%d]@%d", r.DLQPartition, r.DLQOffset), safe(r.Exception), safe(r.Message))
	}
	var more []string
	if n := total - int64(min(len(dl.Records), maxSummaryDeadLettered)); n > 0 {
		more = append(more, fmt.Sprintf("%s more in the JSON report", plural(n, "record", "records")))
	}
	return append(blocks, countsBlock{title: "Dead-lettered records", htmlTitle: "Dead-lettered records", table: &recs, notes: more})
}

type jsonDeadLetters struct {
	Topic      string             `json:"topic"`
	Missing    bool               `json:"missing"`
	Read       int64              `json:"read"`
	ByInput    []jsonDeadInput    `json:"by_input"`
	Records    []jsonDeadLettered `json:"records"`
	Unlisted   int64              `json:"unlisted"`
	Unreadable int64              `json:"unreadable"`
	Unmatched  int64              `json:"unmatched"`
}

type jsonDeadInput struct {
	Input string `json:"input"`
	Count int64  `json:"dead_lettered"`
}

type jsonDeadLettered struct {
	Input        string `json:"input"`
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	Offset       int64  `json:"offset"`
	Timestamp    string `json:"timestamp"`
	ViaTopic     string `json:"via_topic,omitempty"`
	ViaPartition *int32 `json:"via_partition,omitempty"`
	ViaOffset    *int64 `json:"via_offset,omitempty"`
	DLQPartition int32  `json:"dlq_partition"`
	DLQOffset    int64  `json:"dlq_offset"`
	Exception    string `json:"exception"`
	Message      string `json:"message"`
}

// jsonBlock is the "dead_lettered" block.
func (v deadLetterView) jsonBlock() any {
	dl := v.dl
	out := &jsonDeadLetters{Topic: dl.Topic, Missing: dl.Missing, Read: dl.Read, ByInput: []jsonDeadInput{}, Records: []jsonDeadLettered{},
		Unlisted: dl.Unlisted, Unreadable: dl.Unreadable, Unmatched: dl.Unmatched}
	for _, in := range dl.ByInput {
		out.ByInput = append(out.ByInput, jsonDeadInput{Input: in.Input, Count: in.Count})
	}
	for _, r := range dl.Records {
		j := jsonDeadLettered{Input: r.Input, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: FormatTS(r.Timestamp),
			DLQPartition: r.DLQPartition, DLQOffset: r.DLQOffset, Exception: r.Exception, Message: r.Message}
		if r.ViaTopic != "" {
			p, o := r.ViaPartition, r.ViaOffset
			j.ViaTopic, j.ViaPartition, j.ViaOffset = r.ViaTopic, &p, &o
		}
		out.Records = append(out.Records, j)
	}
	return out
}
