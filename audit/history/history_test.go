package history

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestCompareAcrossRuns(t *testing.T) {
	base := []Partition{
		{Topic: "in", Partition: 0, HighWatermark: 100, LSO: 100, Committed: 80, HasCommitted: true},
		{Topic: "in", Partition: 1, HighWatermark: 50, LSO: 50, Committed: 50, HasCommitted: true},
		{Topic: "out", Partition: 0, HighWatermark: 70, LSO: 70},
	}
	tests := []struct {
		name string
		now  []Partition
		want []string // kind topic[partition]
	}{
		{"progress is no finding", []Partition{
			{Topic: "in", Partition: 0, HighWatermark: 120, LSO: 120, Committed: 110, HasCommitted: true},
			{Topic: "in", Partition: 1, HighWatermark: 50, LSO: 50, Committed: 50, HasCommitted: true},
			{Topic: "out", Partition: 0, HighWatermark: 90, LSO: 90},
		}, nil},
		{"log end moved back", []Partition{
			{Topic: "out", Partition: 0, HighWatermark: 65, LSO: 65},
		}, []string{"truncated out[0]"}},
		{"committed offset moved back", []Partition{
			{Topic: "in", Partition: 0, HighWatermark: 100, LSO: 100, Committed: 10, HasCommitted: true},
		}, []string{"offset_reset in[0]"}},
		{"committed offset vanished", []Partition{
			{Topic: "in", Partition: 1, HighWatermark: 60, LSO: 60},
		}, []string{"offset_reset in[1]"}},
		{"both at once, sorted", []Partition{
			{Topic: "out", Partition: 0, HighWatermark: 1, LSO: 1},
			{Topic: "in", Partition: 0, HighWatermark: 90, LSO: 90, Committed: 85, HasCommitted: true},
		}, []string{"truncated in[0]", "truncated out[0]"}},
		{"a partition never seen before", []Partition{
			{Topic: "in", Partition: 7, HighWatermark: 1, LSO: 1},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			if err := s.Record("app", base, at); err != nil {
				t.Fatal(err)
			}
			// Another group's history must not leak into this one.
			if err := s.Record("other", []Partition{{Topic: "in", Partition: 0, HighWatermark: 1 << 40}}, at); err != nil {
				t.Fatal(err)
			}
			got, err := s.Compare("app", tt.now)
			if err != nil {
				t.Fatal(err)
			}
			var gs []string
			for _, f := range got {
				gs = append(gs, fmt.Sprintf("%s %s[%d]", f.Kind, f.Topic, f.Partition))
				if !strings.Contains(f.Evidence, "2026-11-29T10:00:00Z") {
					t.Errorf("evidence %q does not name the previous run", f.Evidence)
				}
			}
			if strings.Join(gs, ",") != strings.Join(tt.want, ",") {
				t.Errorf("findings = %v, want %v", gs, tt.want)
			}
		})
	}
}

func TestHistoryPersistsAcrossOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record("app", []Partition{{Topic: "t", Partition: 0, HighWatermark: 10}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Compare("app", []Partition{{Topic: "t", Partition: 0, HighWatermark: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Kind != finding.Truncated {
		t.Fatalf("after reopening: %+v, want one truncated finding", got)
	}
}
