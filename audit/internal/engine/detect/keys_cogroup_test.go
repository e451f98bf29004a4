package detect

import (
	"strings"
	"testing"
)

// TestKeysCogroup: with the inputs of one cogroup (KeySpec.Cogroup), each
// input's own view of the one shared table decides whether the output owes
// the key, and the output must then be at least as new as that input's
// newest update; the left input's view plays no part (it may lack the key
// where a left join would expect nothing).
func TestKeysCogroup(t *testing.T) {
	spec := &KeySpec{Cogroup: true, Join: "left", Inputs: []InputSpec{{Name: "a", Topic: "topicA"}, {Name: "b", Topic: "topicB", RepartitionTopic: "app-rb-repartition"}}}
	tests := []struct {
		name  string
		facts []fact
		want  []string
	}{
		{"both covered", []fact{cand(0, 100, 0, 1, 1), cand(1, 200, 0, 2, 2), cl(0, 200, 5), cl(1, 200, 5), out(200, 7)}, nil},
		{"output older than b's update", []fact{cand(0, 100, 0, 1, 1), cand(1, 200, 0, 2, 2), cl(0, 200, 5), cl(1, 200, 5), out(150, 7)},
			[]string{"stale output b topicB[0]@2 ts=200 exp=200 obs=150"}},
		{"only b's input, a's view of the table empty", []fact{cand(1, 200, 0, 2, 2), cl(1, 200, 5)},
			[]string{"missing output b topicB[0]@2 ts=200 exp=200 obs=-"}},
		{"the table holds a tombstone: no output owed", []fact{cand(1, 200, 0, 2, 2), clTomb(1, 200, 5)}, nil},
		{"changelog older than a's update", []fact{cand(0, 300, 0, 1, 1), cand(1, 200, 0, 2, 2), cl(0, 200, 5), cl(1, 200, 5), out(200, 7)},
			[]string{"stale changelog a topicA[0]@1 ts=300 exp=300 obs=200 unseen "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := NewKeyEvidence(2)
			e.Reset([]byte("k"))
			for _, f := range tc.facts {
				f(e)
			}
			rows, _ := Keys(spec, e, nil)
			var got []string
			for _, r := range rows {
				got = append(got, rowText(r))
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("rows %q, want %q", got, tc.want)
			}
		})
	}
}
