package detect

import (
	"strings"
	"testing"
)

func TestPoisonPill(t *testing.T) {
	next := []NextRecord{
		{Topic: "in-a", Partition: 0, Offset: 41},
		{Topic: "in-c", Partition: 2, Offset: 7, DecodeError: "schema 3: bad magic byte"},
	}
	tests := []struct {
		name   string
		active bool
		next   []NextRecord
		want   string
	}{
		{"a stopped group at an undecodable record", false, next, "poison_pill in-c[2]"},
		{"a running group is not stuck", true, next, ""},
		{"a stopped group at decodable records", false, next[:1], ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PoisonPill("app", tt.active, tt.next)
			if s := sig(got); !strings.HasPrefix(s, tt.want) || (tt.want == "" && s != "") {
				t.Errorf("got %q, want %q", s, tt.want)
			}
			for _, f := range got {
				if f.Poison == nil || f.Poison.Offset != 7 || f.Poison.Group != "app" || f.Poison.Error == "" {
					t.Errorf("evidence %+v, want the record's offset, the group and the error", f.Poison)
				}
			}
		})
	}
}
