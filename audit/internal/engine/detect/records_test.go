package detect

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// copyFact is one thing known of an identity, applied to a CopyEvidence.
type copyFact func(e *CopyEvidence)

func snk(p int32, off, ts int64) copyFact {
	return func(e *CopyEvidence) { e.AddSink(Record{Partition: p, Offset: off, TS: ts, Key: []byte("k")}) }
}
func due(p int32, off, ts int64) copyFact {
	return func(e *CopyEvidence) { e.AddDue(Record{Partition: p, Offset: off, TS: ts, Key: []byte("k")}) }
}
func pend(p int32, off, ts int64) copyFact {
	return func(e *CopyEvidence) { e.AddPending(Record{Partition: p, Offset: off, TS: ts, Key: []byte("k")}) }
}

func coordsText(cs []finding.Coord) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("[%d]@%d", c.Partition, c.Offset))
	}
	return strings.Join(parts, ",")
}

func sinkRowText(r finding.Row) string {
	obs := "-"
	if r.HasObserved {
		obs = fmt.Sprint(r.ObservedTS)
	}
	s := fmt.Sprintf("%s %s %s %q %s[%d]@%d ts=%d obs=%s", r.Kind, r.Stage, r.Input, r.Key, r.Topic, r.Partition, r.Offset, r.Timestamp, obs)
	if e := r.Sink; e != nil {
		s += fmt.Sprintf(" sink=%s copies=%d source=%d due=%d at=%s", e.Topic, e.Copies, e.SourceCopies, e.Due, coordsText(e.At))
	}
	return s
}

func TestCopies(t *testing.T) {
	tests := []struct {
		name       string
		unexpected bool
		facts      []copyFact
		want       []string
		checked    int64
		unexplain  int64
	}{
		{
			name:    "copied once: nothing",
			facts:   []copyFact{snk(1, 70, 100), due(0, 5, 100)},
			checked: 1,
		},
		{
			name:    "missing: a due record without a copy",
			facts:   []copyFact{due(0, 5, 100)},
			want:    []string{`missing sink orders "k" orders[0]@5 ts=100 obs=- sink=dr.orders copies=0 source=1 due=1 at=`},
			checked: 1,
		},
		{
			name:    "pending records are never missing",
			facts:   []copyFact{pend(0, 5, 100), pend(1, 9, 101)},
			checked: 1,
		},
		{
			name:  "fewer copies than due records: the records beyond the copies are missing, one row each",
			facts: []copyFact{snk(2, 1, 100), due(0, 5, 100), due(0, 8, 100), due(1, 3, 100)},
			want: []string{
				`missing sink orders "k" orders[0]@8 ts=100 obs=100 sink=dr.orders copies=1 source=3 due=3 at=[2]@1`,
				`missing sink orders "k" orders[1]@3 ts=100 obs=100 sink=dr.orders copies=1 source=3 due=3 at=[2]@1`,
			},
			checked: 1,
		},
		{
			name:    "copies of pending records are not duplicates",
			facts:   []copyFact{snk(0, 1, 100), snk(0, 2, 100), pend(0, 9, 100), due(0, 5, 100)},
			checked: 1,
		},
		{
			name:    "a copy of a pending record does not cover a due one: missing is decided on due records",
			facts:   []copyFact{pend(0, 9, 100), due(0, 5, 100)},
			want:    []string{`missing sink orders "k" orders[0]@5 ts=100 obs=- sink=dr.orders copies=0 source=2 due=1 at=`},
			checked: 1,
		},
		{
			name:  "duplicated: more copies than source records, one row naming the first source record",
			facts: []copyFact{snk(0, 1, 100), snk(0, 2, 100), snk(1, 7, 100), snk(1, 8, 100), due(1, 5, 100), pend(0, 9, 100)},
			want: []string{
				`duplicated sink orders "k" orders[0]@9 ts=100 obs=100 sink=dr.orders copies=4 source=2 due=1 at=[0]@1,[0]@2,[1]@7`,
			},
			checked: 1,
		},
		{
			name:      "a sink record with no source record is only counted by default",
			facts:     []copyFact{snk(0, 1, 100), snk(0, 4, 100)},
			unexplain: 2,
		},
		{
			name:       "unexpected when asked: one row naming the first sink copy",
			unexpected: true,
			facts:      []copyFact{snk(0, 1, 100), snk(0, 4, 100)},
			want:       []string{`unexpected sink orders "k" dr.orders[0]@1 ts=100 obs=100 sink=dr.orders copies=2 source=0 due=0 at=[0]@1,[0]@4`},
			unexplain:  2,
		},
	}
	var e CopyEvidence
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.Reset()
			for _, f := range tt.facts {
				f(&e)
			}
			spec := &PairSpec{Name: "orders", Source: "orders", Sink: "dr.orders", ReportUnexpected: tt.unexpected}
			rows, c := Copies(spec, &e, nil)
			var got []string
			for _, r := range rows {
				got = append(got, sinkRowText(r))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("rows:\n got %q\nwant %q", got, tt.want)
			}
			if c.Checked != tt.checked || c.Unexplained != tt.unexplain {
				t.Errorf("counts %+v, want checked %d unexplained %d", c, tt.checked, tt.unexplain)
			}
		})
	}
}

func TestCopiesKeepsKeysPastTheCallback(t *testing.T) {
	var e CopyEvidence
	key := []byte("abc")
	e.AddDue(Record{Partition: 0, Offset: 1, Key: key})
	copy(key, "xyz")
	rows, _ := Copies(&PairSpec{Name: "p", Source: "s", Sink: "t"}, &e, nil)
	if len(rows) != 1 || string(rows[0].Key) != "abc" {
		t.Fatalf("rows %v: the key must be copied when added", rows)
	}
}
