package detect

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
)

func sig(fs []finding.PartitionFinding) string {
	var out []string
	for _, f := range fs {
		s := fmt.Sprintf("%s %s[%d]", f.Kind, f.Topic, f.Partition)
		switch {
		case f.Purge != nil:
			s += fmt.Sprintf(" %+v", *f.Purge)
		case f.Stuck != nil:
			s += fmt.Sprintf(" %+v", *f.Stuck)
		case f.Reset != nil:
			s += fmt.Sprintf(" prev=%d now=%d has=%v", f.Reset.PrevCommitted, f.Reset.Committed, f.Reset.HasCommitted)
		case f.Truncation != nil:
			s += fmt.Sprintf(" prev=%d now=%d", f.Truncation.PrevHighWatermark, f.Truncation.HighWatermark)
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func TestPurgedPastCommit(t *testing.T) {
	tests := []struct {
		name string
		in   []snapshot.Partition
		want string
	}{
		{"purge up to the committed offset is normal", []snapshot.Partition{{Topic: "r", LogStart: 10, Committed: 10, HasCommitted: true}}, ""},
		{"purge below the committed offset is normal", []snapshot.Partition{{Topic: "r", LogStart: 4, Committed: 10, HasCommitted: true}}, ""},
		{"no committed offset proves nothing", []snapshot.Partition{{Topic: "r", LogStart: 10}}, ""},
		{"purged past the committed offset", []snapshot.Partition{
			{Topic: "r", Partition: 0, LogStart: 5, Committed: 10, HasCommitted: true},
			{Topic: "r", Partition: 3, LogStart: 12, Committed: 10, HasCommitted: true},
		}, "purged_past_commit r[3] {Group:app LogStart:12 Committed:10}"},
		{"a committed offset of 0 counts", []snapshot.Partition{{Topic: "r", LogStart: 1, Committed: 0, HasCommitted: true}},
			"purged_past_commit r[0] {Group:app LogStart:1 Committed:0}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sig(PurgedPastCommit("app", tt.in)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
