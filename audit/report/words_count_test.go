package report

import (
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestCountWords(t *testing.T) {
	r := &finding.Row{Kind: finding.Undercount, Stage: finding.StageCount, Input: "a", Key: []byte("k1"), Timestamp: 1000, ObservedTS: 1000, HasObserved: true,
		Evidence: &finding.CountEvidence{Changelog: "app-s-changelog", Partition: 1, Offset: 12, Count: 3, Processed: 5}}
	if got, want := Detail(r), "changelog app-s-changelog[1]@12 counts 3, but 5 records of the key were processed: 2 updates lost"; got != want {
		t.Errorf("Detail = %q, want %q", got, want)
	}
	if got := (streamsView{}).rowNote(r); !strings.Contains(got, "the changelog counts 3 of 5 processed records: 2 updates lost") {
		t.Errorf("rowNote = %q", got)
	}
	if k := finding.StageCount.Kinds(); len(k) != 1 || k[0] != finding.Undercount {
		t.Errorf("count stage kinds %v", k)
	}
}
