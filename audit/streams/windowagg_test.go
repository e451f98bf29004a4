package streams

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"

	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// windowPipeline is a one-input tumbling windowed count over the fake:
// records reach the repartition topic keyed by the group key, and the
// application (process) keeps each partition's stream time as
// KStreamWindowAggregate does, drops late records, and writes each
// window's count to the changelog ([key][start][seqnum]) and the output
// ([key][start]) with the window's max timestamp.
type windowPipeline struct {
	*testPipeline
	w          detect.TimeWindows
	streamTime map[int32]int64
	counts     map[string]int64
	maxTS      map[string]int64
	dropped    int
}

func newWindowPipeline(t *testing.T, count bool) *windowPipeline {
	tp := newTestPipeline(t)
	tp.opt.Inputs = tp.opt.Inputs[:1]
	w := detect.TimeWindows{Size: 60_000, Advance: 60_000, Grace: 600_000}
	tp.opt.Inputs[0].Window = &w
	tp.opt.Inputs[0].Count = count
	return &windowPipeline{testPipeline: tp, w: w, streamTime: map[int32]int64{}, counts: map[string]int64{}, maxTS: map[string]int64{}}
}

// process is the application processing one repartition record of key at
// ts; lose drops the window's update (nothing written).
func (wp *windowPipeline) process(key string, ts int64, lose bool) {
	in := wp.opt.Inputs[0]
	p := partitionFor([]byte(key), 2)
	src := windowSource(in)
	off := wp.f.add(src, p, []byte(key), []byte(key+"|x"), ts, kread.Committed)
	wp.f.group[kread.TP{Topic: src, Partition: p}] = off + 1
	if ts > wp.streamTime[p] {
		wp.streamTime[p] = ts
	}
	for _, start := range wp.w.Starts(ts) {
		if start+wp.w.Size <= wp.streamTime[p]-wp.w.Grace {
			wp.dropped++ // "Skipping record for expired window"
			continue
		}
		if lose {
			continue
		}
		wk := detect.WindowedKey([]byte(key), start)
		id := string(wk)
		wp.counts[id]++
		wp.maxTS[id] = max(wp.maxTS[id], ts)
		wp.f.add(in.ChangelogTopic, p, append(append([]byte(nil), wk...), 0, 0, 0, 0), long(wp.counts[id]), wp.maxTS[id], kread.Committed)
		wp.f.add("out", p, wk, long(wp.counts[id]), wp.maxTS[id], kread.Committed)
	}
}

func TestRunWindowedCount(t *testing.T) {
	const m = 60_000
	type rec struct {
		key  string
		ts   int64
		lose bool
	}
	load := func(lose map[int]bool) []rec {
		var rs []rec
		// Record 3g+j is group g's record of key kj. Grace is 10m, so the
		// windows certainly on time end after 102m20s - 10m: 100m to 102m
		// are checked, 91m is not (on time when processed, but a later
		// record's timestamp bounds stream time), 80m and 81m are late.
		ts := []int64{91 * m, 100 * m, 100*m + 100, 101 * m, 101*m + 5_000, 100*m + 50_000, 102 * m, 102*m + 20_000, 80*m + 1, 81*m + 30_000}
		i := 0
		for _, t0 := range ts {
			for _, k := range []string{"k0", "k1", "k2"} {
				rs = append(rs, rec{k, t0, lose[i]})
				i++
			}
		}
		return rs
	}
	cases := []struct {
		name  string
		lose  map[int]bool
		count bool
		want  []string
	}{
		{name: "clean", count: true},
		{name: "clean reduce", count: false},
		// Record 4 (k1 at 100m+100): its window's later records arrive,
		// so only the count sees it.
		{name: "lost middle update", lose: map[int]bool{4: true}, count: true, want: []string{"undercount count k1 @ 6000000/60000"}},
		// Record 14 (k2 at 101m+5s) is the newest of its window: stale.
		{name: "lost newest update", lose: map[int]bool{14: true}, count: true, want: []string{"stale changelog k2 @ 6060000/60000"}},
		// Records 18 and 21 are k0's two records of window 102m: missing.
		{name: "lost window", lose: map[int]bool{18: true, 21: true}, count: false, want: []string{"missing changelog k0 @ 6120000/60000"}},
		// Record 0 (k0 at 91m) is not certainly on time: never reported.
		{name: "lost uncertain window", lose: map[int]bool{0: true}, count: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wp := newWindowPipeline(t, tc.count)
			for _, r := range load(tc.lose) {
				wp.process(r.key, r.ts, r.lose)
			}
			if wp.dropped != 6 {
				t.Fatalf("the load has %d late records, want 6", wp.dropped)
			}
			res := wp.run(t)
			var got []string
			for _, r := range res.Rows {
				if r.Window == nil || r.Topic != "app-repA-repartition" {
					t.Fatalf("row %+v names no window, or not the repartition record it was read from", r)
				}
				got = append(got, fmt.Sprintf("%s %s %s @ %d/%d", r.Kind, r.Stage, r.Key, r.Window.Start, r.Window.Size))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
			c := res.Summary.Inputs["a"]
			// 30 records: 6 late (dropped) and 3 uncertain, never
			// reported; the audited are the others.
			if c.Scanned != 30 || c.Audited != 21 {
				t.Errorf("input counts %+v, want 30 scanned, 21 audited (6 late, 3 uncertain)", c)
			}
			w, ok := finding.SectionOf[*finding.Windows](&res.Summary)
			if !ok || w.OnTime != 21 || w.LateOrUncertain != 9 || w.Expired != 0 || w.UnknownPartitions != 0 || w.Size != 60_000 {
				t.Errorf("windows section %+v, want 21 on time, 9 late or uncertain", w)
			}
		})
	}
}

// TestRunWindowedUncertain: a repartition partition whose read does not
// start at offset 0 (purged) gives no stream time: nothing is checked,
// nothing reported, even with every update lost.
func TestRunWindowedUncertain(t *testing.T) {
	wp := newWindowPipeline(t, true)
	for i := range 6 {
		wp.process(fmt.Sprintf("k%d", i%3), int64(60_000+i), true)
	}
	in := wp.opt.Inputs[0]
	for p := range int32(2) {
		wp.f.parts[in.RepartitionTopic][p].logStart = 1 // purged by the application
	}
	res := wp.run(t)
	if len(res.Rows) != 0 {
		t.Fatalf("rows %v: stream time unknown, nothing is certain", rowsString(res.Rows))
	}
	if c := res.Summary.Inputs["a"]; c.Audited != 0 {
		t.Errorf("audited %d, want 0", c.Audited)
	}
	if w, _ := finding.SectionOf[*finding.Windows](&res.Summary); w == nil || w.UnknownPartitions == 0 || w.OnTime != 0 || w.LateOrUncertain != 5 {
		t.Errorf("windows section %+v, want partitions of unknown stream time, the 5 records left uncertain", w)
	}
}

// TestRunWindowedWrongSize: a declared size that does not match the
// application's windows stops the audit with a *WindowMismatchError, never
// a loss report.
func TestRunWindowedWrongSize(t *testing.T) {
	wp := newWindowPipeline(t, true)
	for i := range 9 {
		wp.process(fmt.Sprintf("k%d", i%3), int64(5*60_000+i*20_000), false)
	}
	w := detect.TimeWindows{Size: 45_000, Advance: 45_000, Grace: 600_000}
	wp.opt.Inputs[0].Window = &w
	_, err := Run(t.Context(), wp.opt)
	var me *WindowMismatchError
	if !errors.As(err, &me) || me.Misaligned == 0 {
		t.Fatalf("err %v, want a *WindowMismatchError", err)
	}
}

// TestRunWindowedRetention: records older than the topics' retention (with
// the clock-skew margin) are counted as expired, never reported.
func TestRunWindowedRetention(t *testing.T) {
	wp := newWindowPipeline(t, true)
	now := time.UnixMilli(100 * 60_000)
	wp.opt.Now = func() time.Time { return now }
	wp.opt.Inputs[0].WindowRetention = 30 * time.Minute
	wp.opt.Inputs[0].Window = &detect.TimeWindows{Size: 60_000, Advance: 60_000, Grace: 3_600_000} // none late
	// 60m and 64m are at or before now - 30m + 5m (75m): expired; 90m is
	// checked, and its lost update is reported.
	wp.process("k0", 60*60_000, true)
	wp.process("k1", 64*60_000, true)
	wp.process("k2", 90*60_000, true)
	wp.process("k0", 90*60_000+1, false)
	res := wp.run(t)
	if got := rowsString(res.Rows); len(got) != 1 || res.Rows[0].Window.Start != 90*60_000 || string(res.Rows[0].Key) != "k2" {
		t.Fatalf("rows %v, want k2's window 90m missing only", got)
	}
	if w, _ := finding.SectionOf[*finding.Windows](&res.Summary); w == nil || w.Expired != 2 || w.OnTime != 2 {
		t.Errorf("windows section %+v, want 2 expired, 2 on time", w)
	}
}

// TestRunWindowedNothingMatches: when every window checked is missing from
// a changelog that holds windows (another key form, a wrong store), the
// audit stops with a *WindowMismatchError instead of reporting every
// window lost.
func TestRunWindowedNothingMatches(t *testing.T) {
	wp := newWindowPipeline(t, true)
	for i := range 6 {
		wp.process(fmt.Sprintf("k%d", i%3), int64(5*60_000+i), true)
	}
	in := wp.opt.Inputs[0]
	wk := detect.WindowedKey([]byte("K0"), 5*60_000)
	wp.f.add(in.ChangelogTopic, 0, append(wk, 0, 0, 0, 0), long(1), 5*60_000, kread.Committed)
	_, err := Run(t.Context(), wp.opt)
	var me *WindowMismatchError
	if !errors.As(err, &me) || me.Misaligned != 0 || me.Checked != 3 || me.Missing != 3 {
		t.Fatalf("err %v (%+v), want a *WindowMismatchError with 3 windows checked, all missing", err, me)
	}
}

// TestRunWindowedHopping: with hopping windows (size 1m, advance 20s) a
// record belongs to three windows, each checked on its own: a lost update
// is an undercount in each of them.
func TestRunWindowedHopping(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose int
		want []string
	}{
		{name: "clean", lose: -1},
		// Record 4 is k1 at 100m+20s: windows 99m40s, 100m and 100m20s,
		// each with a later k1 record.
		{name: "lost update", lose: 4, want: []string{"undercount count k1 @ 5980000/60000", "undercount count k1 @ 6000000/60000", "undercount count k1 @ 6020000/60000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wp := newWindowPipeline(t, true)
			w := detect.TimeWindows{Size: 60_000, Advance: 20_000, Grace: 600_000}
			wp.w, wp.opt.Inputs[0].Window = w, &w
			for i := range 24 {
				wp.process(fmt.Sprintf("k%d", i%3), int64(6_000_000+i*5_000), i == tc.lose)
			}
			res := wp.run(t)
			var got []string
			for _, r := range res.Rows {
				got = append(got, fmt.Sprintf("%s %s %s @ %d/%d", r.Kind, r.Stage, r.Key, r.Window.Start, r.Window.Size))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
			ws, _ := finding.SectionOf[*finding.Windows](&res.Summary)
			if c := res.Summary.Inputs["a"]; c.Audited != 24 || ws == nil || ws.OnTime != 72 {
				t.Errorf("input %+v, windows %+v: want 24 records audited in 72 (record, window) pairs", c, ws)
			}
		})
	}
}

// TestRunWindowedNoRepartition: groupByKey on the input's own key has no
// repartition topic: the aggregation reads the input topic, and the audit
// reads it too, with the same rules.
func TestRunWindowedNoRepartition(t *testing.T) {
	for _, lose := range []bool{false, true} {
		wp := newWindowPipeline(t, true)
		wp.opt.Inputs[0].RepartitionTopic = ""
		for i := range 9 {
			wp.process(fmt.Sprintf("k%d", i%3), int64(6_000_000+i*1_000), lose && i == 8)
		}
		res := wp.run(t)
		// Record 8, k2's newest, is lost: its window is stale.
		bad := len(res.Rows) != 0
		if lose {
			r := res.Rows
			bad = len(r) != 1 || r[0].Kind != finding.Stale || string(r[0].Key) != "k2" || r[0].Topic != "inA" || r[0].Timestamp != 6_008_000
		}
		if bad {
			t.Errorf("lose %v: rows %v", lose, rowsString(res.Rows))
		}
	}
}

// finalPipeline is a windowPipeline whose windows are emitted final
// (suppress(untilWindowCloses)): each partition's suppress buffer holds
// every window's newest update until the suppress's stream time (the
// greatest timestamp of the updates it received) reaches the window's end
// plus grace, then emits it to the output; each process logs the dirty
// windows to the buffer's changelog (values, tombstones when evicted), as
// InMemoryTimeOrderedKeyValueChangeBuffer#flush does at a commit.
type finalPipeline struct {
	*windowPipeline
	suppressTime map[int32]int64
	buffered     map[int32]map[string]int64 // windowed key -> newest ts
	// lose holds windows ([key][start]) whose emitted result is dropped
	// before the output (the buffer still logs its tombstone).
	lose map[string]bool
}

func newFinalPipeline(t *testing.T) *finalPipeline {
	wp := newWindowPipeline(t, true)
	wp.w.Grace = 10_000
	wp.opt.Inputs[0].Window = &wp.w
	wp.f.topic(bufferTopic, 2)
	wp.opt.Inputs[0].BufferTopic = bufferTopic
	return &finalPipeline{windowPipeline: wp, suppressTime: map[int32]int64{}, buffered: map[int32]map[string]int64{}, lose: map[string]bool{}}
}

func (fp *finalPipeline) process(key string, ts int64) {
	in := fp.opt.Inputs[0]
	p := partitionFor([]byte(key), 2)
	src := windowSource(in)
	off := fp.f.add(src, p, []byte(key), []byte(key+"|x"), ts, kread.Committed)
	fp.f.group[kread.TP{Topic: src, Partition: p}] = off + 1
	fp.streamTime[p] = max(fp.streamTime[p], ts)
	if fp.buffered[p] == nil {
		fp.buffered[p] = map[string]int64{}
	}
	dirty := map[string]bool{}
	for _, start := range fp.w.Starts(ts) {
		if start+fp.w.Size <= fp.streamTime[p]-fp.w.Grace {
			fp.dropped++
			continue
		}
		wk := detect.WindowedKey([]byte(key), start)
		id := string(wk)
		fp.counts[id]++
		fp.maxTS[id] = max(fp.maxTS[id], ts)
		fp.f.add(in.ChangelogTopic, p, append(append([]byte(nil), wk...), 0, 0, 0, 0), long(fp.counts[id]), fp.maxTS[id], kread.Committed)
		fp.buffered[p][id] = fp.maxTS[id]
		fp.suppressTime[p] = max(fp.suppressTime[p], fp.maxTS[id])
		dirty[id] = true
	}
	for id, newest := range fp.buffered[p] {
		_, start, _ := detect.SplitWindowedKey([]byte(id))
		if start+fp.w.Size > fp.suppressTime[p]-fp.w.Grace {
			continue
		}
		if !fp.lose[id] {
			fp.f.add("out", p, []byte(id), long(fp.counts[id]), newest, kread.Committed)
		}
		delete(fp.buffered[p], id)
		dirty[id] = true
	}
	for id := range dirty {
		var val []byte
		if _, ok := fp.buffered[p][id]; ok {
			val = []byte("buffered")
		}
		fp.f.add(bufferTopic, p, []byte(id), val, 0, kread.Committed)
	}
}

// TestRunWindowedFinal: a windowed count emitted final is checked at the
// output per window certainly closed: clean, nothing is reported and the
// open windows are pending; a closed window whose result never reached
// the output is reported missing at the output, naming the changelog
// record; late records (an hour older, dropped by the aggregation) are
// counted as late or uncertain and never reported.
func TestRunWindowedFinal(t *testing.T) {
	const m = 60_000
	cases := []struct {
		name string
		lose []string // "key@minute"
		// restart restarts the application after the load: the new
		// processors' stream time starts anew, so an update of the closed
		// window 2m is accepted and held by the buffer (pending).
		restart bool
		want    []string
	}{
		{name: "clean"},
		{name: "closed window updated after a restart, held by the buffer", restart: true},
		{name: "closed window lost", lose: []string{"k1@3"}, want: []string{"missing output k1 @ 180000/60000"}},
		{name: "two closed windows lost", lose: []string{"k0@1", "k2@4"}, want: []string{"missing output k0 @ 60000/60000", "missing output k2 @ 240000/60000"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fp := newFinalPipeline(t)
			for _, l := range tc.lose {
				var k string
				var min int64
				fmt.Sscanf(l, "%2s@%d", &k, &min)
				fp.lose[string(detect.WindowedKey([]byte(k), min*m))] = true
			}
			// Keys k0..k2 every 20s for minutes 1 to 6, then one record of
			// each at 6m30s: windows up to 5m (end 6m, closed at 6m10s)
			// are closed, minute 6 is open.
			for ts := int64(1 * m); ts < 6*m; ts += 20_000 {
				for _, k := range []string{"k0", "k1", "k2"} {
					fp.process(k, ts)
				}
			}
			for _, k := range []string{"k0", "k1", "k2"} {
				fp.process(k, 6*m+30_000)
			}
			for _, k := range []string{"k0", "k1", "k2"} {
				fp.process(k, 30_000) // window [0, 1m): late, dropped by design
			}
			if fp.dropped != 3 {
				t.Fatalf("the load has %d late records, want 3", fp.dropped)
			}
			buffered := 0
			if tc.restart {
				clear(fp.streamTime)
				clear(fp.suppressTime)
				fp.process("k1", 2*m+50_000) // newer than the window's emitted 2m40s
				buffered = 1
			}
			res := fp.run(t)
			var got []string
			for _, r := range res.Rows {
				if r.Window == nil || r.Topic != fp.opt.Inputs[0].ChangelogTopic || r.ExpectedTS != r.Timestamp {
					t.Fatalf("row %+v names no window, or not the changelog record", r)
				}
				got = append(got, fmt.Sprintf("%s %s %s @ %d/%d", r.Kind, r.Stage, r.Key, r.Window.Start, r.Window.Size))
			}
			slices.Sort(got)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
			w, ok := finding.SectionOf[*finding.Windows](&res.Summary)
			if !ok || !w.Final || w.FinalOpen != 3 || w.FinalBuffered != int64(buffered) || w.LateOrUncertain < 3 {
				t.Errorf("windows section %+v, want emitted final, the 3 windows of minute 6 open, %d closed and buffered, the late records uncertain", w, buffered)
			}
			if c := res.Summary.Stages[finding.StageOutput].KeysChecked; c != 15 {
				t.Errorf("output checked %d windows, want 15 (3 keys, minutes 1 to 5)", c)
			}
		})
	}
}
