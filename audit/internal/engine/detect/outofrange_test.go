package detect

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

func rangeSig(fs []finding.PartitionFinding) string {
	var out []string
	for _, f := range fs {
		s := fmt.Sprintf("%s %s[%d]", f.Kind, f.Topic, f.Partition)
		switch e := f.Evidence.(type) {
		case *finding.OutOfRangeEvidence:
			s += fmt.Sprintf(" %+v", *e)
		case *finding.UnprocessedEvidence:
			s += fmt.Sprintf(" %+v", *e)
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func TestOffsetOutOfRange(t *testing.T) {
	part := func(topic string, p int32, start, hw, committed int64) snapshot.Partition {
		return snapshot.Partition{Topic: topic, Partition: p, LogStart: start, LSO: hw, HighWatermark: hw, Committed: committed, HasCommitted: committed >= 0}
	}
	tests := []struct {
		name            string
		inputs, reparts []snapshot.Partition
		recheck         map[kread.TP]int64
		want            string
	}{
		{"inside the log", []snapshot.Partition{part("in", 0, 0, 10, 5), part("in", 1, 3, 10, 3), part("in", 2, 0, 10, 10)}, nil, nil, ""},
		{"no committed offset proves nothing", []snapshot.Partition{part("in", 0, 5, 10, -1)}, nil, nil, ""},
		{"above the high watermark", []snapshot.Partition{part("in", 1, 0, 10, 12)}, nil, nil,
			"offset_out_of_range in[1] {Group:app Committed:12 LogStart:0 HighWatermark:10}"},
		{"below the log start, confirmed by the recheck", []snapshot.Partition{part("in", 0, 8, 10, 5)}, nil,
			map[kread.TP]int64{{Topic: "in", Partition: 0}: 6},
			"offset_out_of_range in[0] {Group:app Committed:6 LogStart:8 HighWatermark:10}"},
		{"below the log start, processed since (recheck at the log start)", []snapshot.Partition{part("in", 0, 8, 10, 5)}, nil,
			map[kread.TP]int64{{Topic: "in", Partition: 0}: 8}, ""},
		{"below the log start without a recheck proves nothing", []snapshot.Partition{part("in", 0, 8, 10, 5)}, nil, nil, ""},
		{"repartition below the log start is purged_past_commit's", nil, []snapshot.Partition{part("r", 0, 8, 10, 5)}, nil, ""},
		{"repartition above the high watermark", nil, []snapshot.Partition{part("r", 2, 0, 10, 11)}, nil,
			"offset_out_of_range r[2] {Group:app Committed:11 LogStart:0 HighWatermark:10}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rangeSig(OffsetOutOfRange("app", tt.inputs, tt.reparts, tt.recheck)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	below := BelowLogStart([]snapshot.Partition{part("in", 0, 8, 10, 5), part("in", 1, 0, 10, 5), part("in", 2, 8, 10, -1)})
	if len(below) != 1 || below[0] != (kread.TP{Topic: "in", Partition: 0}) {
		t.Errorf("BelowLogStart = %v, want [in[0]]", below)
	}
}

func TestUnprocessedPartition(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	old := FirstRecord{Timestamp: now.Add(-time.Hour).UnixMilli(), Has: true}
	recent := FirstRecord{Timestamp: now.Add(-time.Minute).UnixMilli(), Has: true}
	part := func(topic string, p int32, start, lso, committed int64) snapshot.Partition {
		return snapshot.Partition{Topic: topic, Partition: p, LogStart: start, LSO: lso, HighWatermark: lso, Committed: committed, HasCommitted: committed >= 0}
	}
	tp := func(topic string, p int32) kread.TP { return kread.TP{Topic: topic, Partition: p} }
	tests := []struct {
		name   string
		inputs []snapshot.Partition
		first  map[kread.TP]FirstRecord
		want   string
	}{
		{"every partition committed", []snapshot.Partition{part("in", 0, 0, 10, 10), part("in", 1, 0, 10, 4)}, nil, ""},
		{"an old partition without a commit", []snapshot.Partition{part("in", 0, 0, 10, 10), part("in", 1, 2, 7, -1)},
			map[kread.TP]FirstRecord{tp("in", 1): old},
			fmt.Sprintf("unprocessed_partition in[1] {Group:app LogStart:2 LSO:7 FirstTimestamp:%d Age:10m0s}", old.Timestamp)},
		{"records younger than the age", []snapshot.Partition{part("in", 0, 0, 10, 10), part("in", 1, 0, 7, -1)},
			map[kread.TP]FirstRecord{tp("in", 1): recent}, ""},
		{"an empty partition", []snapshot.Partition{part("in", 0, 0, 10, 10), part("in", 1, 5, 5, -1)},
			map[kread.TP]FirstRecord{tp("in", 1): old}, ""},
		{"no offsets on the topic at all (no_committed_offsets says so)", []snapshot.Partition{part("in", 0, 0, 10, -1), part("in", 1, 0, 7, -1)},
			map[kread.TP]FirstRecord{tp("in", 0): old, tp("in", 1): old}, ""},
		{"offsets on another topic only", []snapshot.Partition{part("a", 0, 0, 10, 10), part("b", 0, 0, 7, -1)},
			map[kread.TP]FirstRecord{tp("b", 0): old}, ""},
		{"first record unknown", []snapshot.Partition{part("in", 0, 0, 10, 10), part("in", 1, 0, 7, -1)}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rangeSig(UnprocessedPartition("app", tt.inputs, tt.first, now, 10*time.Minute)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	w := WithoutCommit([]snapshot.Partition{part("in", 0, 0, 10, 10), part("in", 1, 0, 7, -1), part("in", 2, 3, 3, -1), part("x", 0, 0, 7, -1)})
	if len(w) != 1 || w[0].Partition != 1 || w[0].Topic != "in" {
		t.Errorf("WithoutCommit = %+v, want in[1]", w)
	}
}
