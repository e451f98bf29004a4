package scan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/kread"
)

// fakeReader serves canned offsets and records, and checks the ranges it
// is asked to read.
type fakeReader struct {
	offsets map[string]map[int32]kread.Offsets
	recs    map[kread.TP][]kread.Record
	stats   map[kread.TP]kread.Stats
	times   map[string]map[int32]int64 // by topic + "@" + RFC 3339 time
	asked   []kread.Range
}

func (f *fakeReader) OffsetsForTime(_ context.Context, topic string, t time.Time) (map[int32]int64, error) {
	o, ok := f.times[topic+"@"+t.Format(time.RFC3339)]
	if !ok {
		return nil, fmt.Errorf("unexpected offsets-for-time lookup %s at %s", topic, t)
	}
	return o, nil
}

func (f *fakeReader) Offsets(_ context.Context, topic string) (map[int32]kread.Offsets, error) {
	o, ok := f.offsets[topic]
	if !ok {
		return nil, fmt.Errorf("topic %q: %w", topic, kread.ErrUnknownTopic)
	}
	return o, nil
}

func (f *fakeReader) Read(_ context.Context, ranges []kread.Range, o kread.ReadOptions, fn func([]kread.Record) error) (map[kread.TP]kread.Stats, error) {
	f.asked = append(f.asked, ranges...)
	for _, r := range ranges {
		tp := kread.TP{Topic: r.Topic, Partition: r.Partition}
		if recs := f.recs[tp]; len(recs) > 0 {
			if err := fn(recs); err != nil {
				return nil, err
			}
			if o.Progress != nil {
				o.Progress(tp, recs[len(recs)-1].Offset+1)
			}
		}
		if o.Progress != nil {
			o.Progress(tp, r.To)
		}
	}
	return f.stats, nil
}

func TestRunMapsSnapshotAndStats(t *testing.T) {
	f := &fakeReader{
		offsets: map[string]map[int32]kread.Offsets{
			"b": {1: {LogStart: 5, LSO: 9, HighWatermark: 12}, 0: {LogStart: 0, LSO: 3, HighWatermark: 3}},
			"a": {0: {LogStart: 0, LSO: 0, HighWatermark: 0}},
		},
		recs: map[kread.TP][]kread.Record{
			{Topic: "b", Partition: 1}: {
				{Topic: "b", Partition: 1, Offset: 5, Value: []byte("ok")},
				{Topic: "b", Partition: 1, Offset: 6, Value: []byte("bad")},
				{Topic: "b", Partition: 1, Offset: 8, Value: []byte("bad")},
			},
			{Topic: "b", Partition: 0}: {{Topic: "b", Partition: 0, Offset: 0, Value: []byte("bad")}},
		},
		stats: map[kread.TP]kread.Stats{
			{Topic: "b", Partition: 1}: {Committed: 3, Aborted: 1, Control: 1, FirstTS: 1000, LastTS: 2000, Next: 9},
			{Topic: "b", Partition: 0}: {Committed: 1, Control: 2, FirstTS: 7, LastTS: 7, Next: 3},
			{Topic: "a", Partition: 0}: {Next: 0},
		},
	}
	check := func(r *kread.Record) error {
		if string(r.Value) == "bad" {
			return errors.New("undecodable")
		}
		return nil
	}
	var cnt counter
	rows, err := Run(context.Background(), f, []string{"b", "a"}, Options{Check: check, Counter: &cnt})
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Topic: "b", Partition: 0, LogStart: 0, LSO: 3, HighWatermark: 3, To: 3, Committed: 1, Control: 2, DecodeErrors: 1, FirstTS: 7, LastTS: 7, ReadTo: 3},
		{Topic: "b", Partition: 1, LogStart: 5, LSO: 9, HighWatermark: 12, From: 5, To: 9, Committed: 3, Aborted: 1, Control: 1, DecodeErrors: 2, FirstTS: 1000, LastTS: 2000, ReadTo: 9},
		{Topic: "a", Partition: 0},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("rows\n got %+v\nwant %+v", rows, want)
	}
	wantRanges := "[{b 0 0 3} {b 1 5 9} {a 0 0 0}]"
	if got := fmt.Sprint(f.asked); got != wantRanges {
		t.Errorf("read ranges %s, want %s (log start to LSO)", got, wantRanges)
	}
	if cnt.total != 7 || cnt.done != 7 || cnt.adds != 5 {
		t.Errorf("counter total %d done %d in %d adds; want 7, 7, 5", cnt.total, cnt.done, cnt.adds)
	}
	if !rows[1].OpenTxn() || rows[0].OpenTxn() {
		t.Errorf("open txn flags: %v %v", rows[0].OpenTxn(), rows[1].OpenTxn())
	}
}

func TestRunTimeWindow(t *testing.T) {
	from := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	f := &fakeReader{
		offsets: map[string]map[int32]kread.Offsets{"t": {
			0: {LogStart: 10, LSO: 100, HighWatermark: 120}, // window inside the log
			1: {LogStart: 50, LSO: 60, HighWatermark: 60},   // window starts before the log start
			2: {LogStart: 0, LSO: 30, HighWatermark: 40},    // window entirely above the LSO
		}},
		times: map[string]map[int32]int64{
			"t@" + from.Format(time.RFC3339): {0: 20, 1: 5, 2: 35},
			"t@" + to.Format(time.RFC3339):   {0: 80, 1: 70, 2: 40},
		},
	}
	rows, err := Run(context.Background(), f, []string{"t"}, Options{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(f.asked), "[{t 0 20 80} {t 1 50 60} {t 2 30 30}]"; got != want {
		t.Errorf("read ranges %s, want %s", got, want)
	}
	for i, want := range [][2]int64{{20, 80}, {50, 60}, {30, 30}} {
		if rows[i].From != want[0] || rows[i].To != want[1] {
			t.Errorf("row %d range [%d, %d), want %v", i, rows[i].From, rows[i].To, want)
		}
	}
	var tb bytes.Buffer
	if err := WriteTable(&tb, rows); err != nil {
		t.Fatal(err)
	}
	if first := strings.SplitN(tb.String(), "\n", 2)[0]; !strings.Contains(first, "HIGH_WATERMARK  FROM  TO  COMMITTED") {
		t.Errorf("windowed table header %q lacks FROM and TO", first)
	}
}

func TestRunUnknownTopic(t *testing.T) {
	f := &fakeReader{offsets: map[string]map[int32]kread.Offsets{"a": {}}}
	_, err := Run(context.Background(), f, []string{"a", "missing-topic"}, Options{})
	if !errors.Is(err, kread.ErrUnknownTopic) || !strings.Contains(err.Error(), "missing-topic") {
		t.Fatalf("err = %v", err)
	}
}

func TestWriters(t *testing.T) {
	rows := []Row{
		{Topic: "orders", Partition: 0, LogStart: 0, LSO: 10, HighWatermark: 10, From: 0, To: 10, Committed: 7, Aborted: 1, Control: 2,
			FirstTS: 1795947302123, LastTS: 1795947303000},
		{Topic: "orders", Partition: 1, LogStart: 4, LSO: 4, HighWatermark: 9, From: 4, To: 4},
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, rows); err != nil {
		t.Fatal(err)
	}
	wantJS := `{"topic":"orders","partition":0,"log_start":0,"lso":10,"high_watermark":10,"from_offset":0,"to_offset":10,"committed":7,"aborted":1,"control":2,"decode_errors":0,"first_ts":"2026-11-29T10:15:02.123Z","last_ts":"2026-11-29T10:15:03.000Z"}
{"topic":"orders","partition":1,"log_start":4,"lso":4,"high_watermark":9,"from_offset":4,"to_offset":4,"committed":0,"aborted":0,"control":0,"decode_errors":0,"first_ts":null,"last_ts":null}
`
	if js.String() != wantJS {
		t.Errorf("JSON\n got %s\nwant %s", js.String(), wantJS)
	}

	var tb bytes.Buffer
	if err := WriteTable(&tb, rows); err != nil {
		t.Fatal(err)
	}
	wantTable := `TOPIC   PARTITION  LOG_START  LSO  HIGH_WATERMARK  COMMITTED  ABORTED  CONTROL  DECODE_ERR  FIRST_TS                  LAST_TS                   NOTE
orders  0          0          10   10              7          1        2        0           2026-11-29T10:15:02.123Z  2026-11-29T10:15:03.000Z
orders  1          4          4    9               0          0        0        0           -                         -                         open txn (5 offsets above LSO)

2 partitions, 7 committed and 1 aborted records, 1 with an open transaction (LSO < high watermark)
`
	if tb.String() != wantTable {
		t.Errorf("table\n got:\n%s\nwant:\n%s", tb.String(), wantTable)
	}
}

type counter struct{ total, done, adds int64 }

func (c *counter) SetTotal(total int64) { c.total = total }
func (c *counter) Add(n, _ int64)       { c.done += n; c.adds++ }
