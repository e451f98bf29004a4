package report

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// TestEvidenceOfTheRootCauseSignatures: offset_out_of_range (above the
// high watermark, below the log start) and unprocessed_partition say what
// happened, with the offsets that prove it.
func TestEvidenceOfTheRootCauseSignatures(t *testing.T) {
	tests := []struct {
		name  string
		p     finding.PartitionFinding
		words []string
		offs  map[string]int64
	}{
		{"above the high watermark", finding.PartitionFinding{Kind: finding.OffsetOutOfRange, Topic: "in", OutOfRange: &finding.OutOfRangeEvidence{Group: "app", Committed: 900, HighWatermark: 850}},
			[]string{"committed offset 900 of group app is above the high watermark 850", "truncated", "50 processed offsets are gone"},
			map[string]int64{"committed": 900, "log_start": 0, "high_watermark": 850}},
		{"below the log start", finding.PartitionFinding{Kind: finding.OffsetOutOfRange, Topic: "in", OutOfRange: &finding.OutOfRangeEvidence{Group: "app", Committed: 100, LogStart: 160, HighWatermark: 400}},
			[]string{"committed offset 100 of group app is below the log start offset 160", "60 offsets were deleted", "auto.offset.reset"},
			map[string]int64{"committed": 100, "log_start": 160, "high_watermark": 400}},
		{"unprocessed", finding.PartitionFinding{Kind: finding.UnprocessedPartition, Topic: "in", Unprocessed: &finding.UnprocessedEvidence{Group: "app", LogStart: 3, LSO: 45,
			FirstTimestamp: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).UnixMilli(), Age: 10 * time.Minute}},
			[]string{"group app has committed offsets on other partitions of the topic but none on this one", "42 offsets of records since 2026-11-29T09:00:00.000Z", "audit.unprocessed_after, 10m0s", "auto.offset.reset=latest"},
			map[string]int64{"log_start": 3, "lso": 45}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, offs := Evidence(&tt.p)
			for _, w := range tt.words {
				if !strings.Contains(text, w) {
					t.Errorf("evidence %q lacks %q", text, w)
				}
			}
			if !reflect.DeepEqual(offs, tt.offs) {
				t.Errorf("offsets %v, want %v", offs, tt.offs)
			}
		})
	}
}
