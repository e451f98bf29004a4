package detect

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// TestStreamCopies checks the per-record stream rule: each due record of
// an identity needs a copy in the output or in a link's unprocessed tail;
// rows name the input each record came from.
func TestStreamCopies(t *testing.T) {
	spec := &StreamSpec{Inputs: []PairSpec{{Name: "a", Source: "ta"}, {Name: "b", Source: "tb"}}, Output: "out"}
	rec := func(pair int, p int32, off int64) Record {
		return Record{Pair: pair, Partition: p, Offset: off, TS: 7, Key: []byte("k")}
	}
	tests := []struct {
		name              string
		sink, link        int
		pending           int
		due               []Record
		want              string
		checked, unexplan int64
	}{
		{name: "one copy per due record", sink: 2, due: []Record{rec(0, 0, 1), rec(1, 0, 1)}, want: "", checked: 1},
		{name: "merged inputs, one copy lost", sink: 1, due: []Record{rec(0, 0, 1), rec(1, 0, 3)}, want: "missing b tb[0]@3", checked: 1},
		{name: "copy pending in a link tail", sink: 1, link: 1, due: []Record{rec(0, 0, 1), rec(0, 1, 2)}, want: "", checked: 1},
		{name: "link tail does not cover two", sink: 0, link: 1, due: []Record{rec(0, 0, 1), rec(0, 1, 2)}, want: "missing a ta[1]@2", checked: 1},
		{name: "at-least-once duplicate", sink: 3, pending: 1, due: []Record{rec(1, 2, 5)}, want: "duplicated b tb[2]@5", checked: 1},
		{name: "pending only", pending: 2, want: "", checked: 1},
		{name: "output record without input record", sink: 2, want: "", unexplan: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e CopyEvidence
			e.Reset()
			for i := 0; i < tt.sink; i++ {
				e.AddSink(Record{Partition: 0, Offset: int64(i), TS: 7, Key: []byte("k")})
			}
			for i := 0; i < tt.link; i++ {
				e.AddLink(Record{})
			}
			for i := 0; i < tt.pending; i++ {
				e.AddPending(rec(1, 9, int64(100+i)))
			}
			for _, r := range tt.due {
				e.AddDue(r)
			}
			rows, c := StreamCopies(spec, &e, nil)
			var got []string
			for _, r := range rows {
				if r.Stage != finding.StageSink || string(r.Key) != "k" || r.Timestamp != 7 {
					t.Errorf("row %+v", r)
				}
				got = append(got, fmt.Sprintf("%s %s %s[%d]@%d", r.Kind, r.Input, r.Topic, r.Partition, r.Offset))
			}
			if g := strings.Join(got, "; "); g != tt.want {
				t.Errorf("rows %q, want %q", g, tt.want)
			}
			if c.Checked != tt.checked || c.Unexplained != tt.unexplan {
				t.Errorf("counts %+v, want checked %d unexplained %d", c, tt.checked, tt.unexplan)
			}
		})
	}
}
