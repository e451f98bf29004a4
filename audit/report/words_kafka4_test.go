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
		{"above the high watermark", finding.PartitionFinding{Kind: finding.OffsetOutOfRange, Topic: "in", Evidence: &finding.OutOfRangeEvidence{Group: "app", Committed: 900, HighWatermark: 850}},
			[]string{"committed offset 900 of group app is above the high watermark 850", "truncated", "50 processed offsets are gone"},
			map[string]int64{"committed": 900, "log_start": 0, "high_watermark": 850}},
		{"below the log start", finding.PartitionFinding{Kind: finding.OffsetOutOfRange, Topic: "in", Evidence: &finding.OutOfRangeEvidence{Group: "app", Committed: 100, LogStart: 160, HighWatermark: 400}},
			[]string{"committed offset 100 of group app is below the log start offset 160", "60 offsets were deleted", "auto.offset.reset"},
			map[string]int64{"committed": 100, "log_start": 160, "high_watermark": 400}},
		{"unprocessed", finding.PartitionFinding{Kind: finding.UnprocessedPartition, Topic: "in", Evidence: &finding.UnprocessedEvidence{Group: "app", LogStart: 3, LSO: 45,
			FirstTimestamp: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).UnixMilli(), Age: 10 * time.Minute}},
			[]string{"group app has committed offsets on other partitions of the topic but none on this one", "42 offsets of records since 2026-11-29T09:00:00.000Z", "audit.unprocessed_after, 10m0s", "auto.offset.reset=latest"},
			map[string]int64{"log_start": 3, "lso": 45}},
		{"stuck_lso names the holder and the commands", finding.PartitionFinding{Kind: finding.StuckLSO, Topic: "app-s-changelog", Partition: 2, Evidence: &finding.StuckEvidence{LSO: 70, StartHighWatermark: 80, HighWatermark: 90, Waited: time.Minute,
			Holder: &finding.TxnHolder{Leader: 3, ProducerID: 4001, ProducerEpoch: 5, StartOffset: 70, TransactionalID: "app-1_0", State: "Ongoing"}}},
			[]string{"a transaction is hanging", `producer id 4001 (epoch 5, transactional id "app-1_0", Ongoing)`, "started at offset 70",
				"kafka-transactions.sh --bootstrap-server HOST:PORT find-hanging --broker-id 3",
				"kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic app-s-changelog --partition 2 --start-offset 70"},
			map[string]int64{"lso": 70, "high_watermark_at_start": 80, "high_watermark": 90, "producer_id": 4001, "txn_start_offset": 70}},
		{"stuck_lso held by a producer no coordinator lists", finding.PartitionFinding{Kind: finding.StuckLSO, Topic: "out", Evidence: &finding.StuckEvidence{LSO: 70, StartHighWatermark: 80, HighWatermark: 90,
			Holder: &finding.TxnHolder{Leader: 1, ProducerID: 9, StartOffset: 70}}},
			[]string{"producer id 9 (epoch 0, transactional id not listed: lossaudit's principal lacks DESCRIBE on it, or no coordinator lists it)", "abort --topic out --partition 0 --start-offset 70"},
			map[string]int64{"lso": 70, "high_watermark_at_start": 80, "high_watermark": 90, "producer_id": 9, "txn_start_offset": 70}},
		{"stuck_lso, holder unknown", finding.PartitionFinding{Kind: finding.StuckLSO, Topic: "out", Evidence: &finding.StuckEvidence{LSO: 70, StartHighWatermark: 80, HighWatermark: 90, HolderError: "no leader known"}},
			[]string{"could not be named (no leader known)"},
			map[string]int64{"lso": 70, "high_watermark_at_start": 80, "high_watermark": 90}},
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
