package compare

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// TestPlan: a step reads each sink from where the last step stopped and
// each source from the last due offset, a partition the last step did not
// know from its log start, and refuses a partition that now ends below
// where the last step stopped.
func TestPlan(t *testing.T) {
	topic := func(name string, hw ...int64) snapshot.Topic {
		st := snapshot.Topic{Name: name, Offsets: map[int32]kread.Offsets{}}
		for p, h := range hw {
			st.Parts = append(st.Parts, int32(p))
			st.Offsets[int32(p)] = kread.Offsets{LogStart: 0, LSO: h, HighWatermark: h}
		}
		return st
	}
	last := &checkpoint{Parts: []cpPart{{Topic: "dr.o", Partition: 0, Next: 40}, {Topic: "dr.o", Partition: 1, Next: 7},
		{Topic: "o", Partition: 0, Next: 30}}}
	for _, tt := range []struct {
		name         string
		cp           *checkpoint
		sink, source snapshot.Topic
		want         map[kread.TP]int64
		truncated    *TruncatedError
	}{
		{"baseline", nil, topic("dr.o", 50), topic("o", 60), map[kread.TP]int64{}, nil},
		{"later step", last, topic("dr.o", 50, 7), topic("o", 60, 5),
			map[kread.TP]int64{{Topic: "dr.o", Partition: 0}: 40, {Topic: "dr.o", Partition: 1}: 7, {Topic: "o", Partition: 0}: 30}, nil},
		{"sink truncated", last, topic("dr.o", 39, 7), topic("o", 60), nil, &TruncatedError{Topic: "dr.o", Partition: 0, HighWatermark: 39, Next: 40}},
		{"source truncated", last, topic("dr.o", 40, 7), topic("o", 29), nil, &TruncatedError{Topic: "o", Partition: 0, HighWatermark: 29, Next: 30}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &modePass{o: Options{Pairs: []Pair{{Name: "o", Source: "o", Sink: "dr.o"}}}, col: &collector{},
				snap: &compareSnapshot{sinks: []snapshot.Topic{tt.sink}, sources: []snapshot.Topic{tt.source}}}
			s := &stepRun{p: p, cp: tt.cp}
			err := s.plan()
			var te *TruncatedError
			switch {
			case tt.truncated != nil:
				if !errors.As(err, &te) || *te != *tt.truncated {
					t.Fatalf("plan: %v, want %v", err, tt.truncated)
				}
			case err != nil:
				t.Fatal(err)
			case !reflect.DeepEqual(p.col.from, tt.want):
				t.Errorf("reads from %v, want %v", p.col.from, tt.want)
			}
		})
	}
}

// TestDescribe: the text a state is bound to changes with everything that
// changes what the state means, and names the rule that makes records due.
func TestDescribe(t *testing.T) {
	base := Options{Match: "record", Grace: 5 * time.Minute, Pairs: []Pair{{Name: "o", Source: "o", Sink: "dr.o"}}}
	if got, want := describe(base, "sink_kafka=kafka"), "compare match=record grace=5m0s report_unexpected=false pair=o:o>dr.o sink_kafka=kafka"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	for name, change := range map[string]func(o *Options){
		"match":      func(o *Options) { o.Match = "key" },
		"grace":      func(o *Options) { o.Grace = time.Minute },
		"group":      func(o *Options) { o.Group = "mm2" },
		"unexpected": func(o *Options) { o.ReportUnexpected = true },
		"pair":       func(o *Options) { o.Pairs = []Pair{{Name: "o", Source: "o", Sink: "backup.o"}} },
	} {
		o := base
		change(&o)
		if describe(o, "") == describe(base, "") {
			t.Errorf("changing the %s does not change the state's binding", name)
		}
	}
}
