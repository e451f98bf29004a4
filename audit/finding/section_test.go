package finding

import "testing"

func TestSectionOf(t *testing.T) {
	cs := &CompareSummary{Match: "record"}
	st := &Streams{Pipeline: &Pipeline{Output: "out"}}
	tests := []struct {
		name     string
		sections []Section
		compare  bool
		streams  bool
	}{
		{"none", nil, false, false},
		{"compare", []Section{cs}, true, false},
		{"streams", []Section{st}, false, true},
		{"both, in any order", []Section{st, cs}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Summary{Sections: tt.sections}
			if got, ok := SectionOf[*CompareSummary](s); ok != tt.compare || (ok && got != cs) {
				t.Errorf("SectionOf[*CompareSummary] = %v, %v", got, ok)
			}
			if got, ok := SectionOf[*Streams](s); ok != tt.streams || (ok && got != st) {
				t.Errorf("SectionOf[*Streams] = %v, %v", got, ok)
			}
		})
	}
}

// TestPartitionEvidenceKinds: each partition finding's evidence type names
// the finding kind it proves.
func TestPartitionEvidenceKinds(t *testing.T) {
	for _, tt := range []struct {
		ev   Evidence
		kind PartitionKind
	}{
		{&PurgeEvidence{}, PurgedPastCommit},
		{&StuckEvidence{}, StuckLSO},
		{&ResetEvidence{}, OffsetReset},
		{&TruncationEvidence{}, Truncated},
		{&PoisonEvidence{}, PoisonPill},
	} {
		if got := tt.ev.EvidenceKind(); got != string(tt.kind) {
			t.Errorf("%T.EvidenceKind() = %q, want %q", tt.ev, got, tt.kind)
		}
	}
}
