package streams

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// timelineLevels are the bucket widths the timeline is kept in, finest
// first. Each is a multiple of the one before, so counts move exactly into
// a coarser level; past the last, the width doubles.
var timelineLevels = []time.Duration{
	100 * time.Millisecond, time.Second, 10 * time.Second, time.Minute, 10 * time.Minute,
	time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour,
}

// maxTimelineBuckets bounds the buckets kept per input: when an input's
// records fall into more, the whole timeline moves to the next coarser
// level, so memory stays bounded whatever the timestamps are.
const maxTimelineBuckets = 4096

// maxTimelineTS is the last timestamp (Unix ms) the timeline tells apart,
// the last a time.Duration since the epoch can hold (year 2262). Timestamps
// outside [0, maxTimelineTS] count at the nearer end, so that a bounded
// number of buckets always covers every record.
const maxTimelineTS = math.MaxInt64 / int64(time.Millisecond)

// clampTS bounds ts to the range the timeline covers.
func clampTS(ts int64) int64 { return min(max(ts, 0), maxTimelineTS) }

// timeline counts input records per timestamp bucket while the reads run
// (finding.Timeline); safe for concurrent use. Read callbacks count into a
// timelineBatch of their own and merge it once per callback.
type timeline struct {
	width  atomic.Int64 // bucket width in ms; only grows
	mu     sync.Mutex
	level  int
	inputs []map[int64]finding.BucketCounts
}

func newTimeline(inputs int) *timeline {
	t := &timeline{inputs: make([]map[int64]finding.BucketCounts, inputs)}
	for x := range t.inputs {
		t.inputs[x] = map[int64]finding.BucketCounts{}
	}
	t.width.Store(timelineLevels[0].Milliseconds())
	return t
}

// floorTo returns the start of the width-wide bucket holding ts (ts >= 0).
func floorTo(ts, width int64) int64 { return ts - ts%width }

// timelineBatch is one read callback's counts. Records of one partition
// come in offset order, so their timestamps mostly fall in the bucket of
// the record before: that bucket is counted apart (cur) and goes into the
// map only when the bucket changes.
type timelineBatch struct {
	width  int64
	curK   int64
	cur    finding.BucketCounts
	hasCur bool
	m      map[int64]finding.BucketCounts
}

// batch starts counting one read callback's records.
func (t *timeline) batch() timelineBatch { return timelineBatch{width: t.width.Load()} }

// note counts one record with timestamp ts, audited or pending.
func (b *timelineBatch) note(ts int64, pending bool) {
	if !b.hasCur || ts < b.curK || ts-b.curK >= b.width {
		b.flush()
		b.curK, b.hasCur = floorTo(clampTS(ts), b.width), true
	}
	if pending {
		b.cur.Pending++
	} else {
		b.cur.Audited++
	}
}

// flush moves the current bucket's counts into the map.
func (b *timelineBatch) flush() {
	if !b.hasCur {
		return
	}
	if b.m == nil {
		b.m = map[int64]finding.BucketCounts{}
	}
	c := b.m[b.curK]
	c.Audited += b.cur.Audited
	c.Pending += b.cur.Pending
	b.m[b.curK] = c
	b.cur, b.hasCur = finding.BucketCounts{}, false
}

// add merges input x's batch into the timeline.
func (t *timeline) add(x int, b timelineBatch) {
	b.flush()
	if len(b.m) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.width.Load()
	m := t.inputs[x]
	for k, c := range b.m {
		k = floorTo(k, w) // the timeline may have grown coarser since the batch began
		old := m[k]
		old.Audited += c.Audited
		old.Pending += c.Pending
		m[k] = old
	}
	for len(t.inputs[x]) > maxTimelineBuckets && t.coarsen() {
	}
}

// coarsen moves every input to the next level; false when the width cannot
// grow any more. The caller holds mu.
func (t *timeline) coarsen() bool {
	w := t.width.Load()
	var next int64
	if t.level+1 < len(timelineLevels) {
		next = timelineLevels[t.level+1].Milliseconds()
	} else if w <= maxTimelineTS/2 {
		next = 2 * w
	} else {
		return false
	}
	t.level++
	for x, m := range t.inputs {
		c := make(map[int64]finding.BucketCounts, len(m)/2)
		for k, v := range m {
			k = floorTo(k, next)
			o := c[k]
			o.Audited += v.Audited
			o.Pending += v.Pending
			c[k] = o
		}
		t.inputs[x] = c
	}
	t.width.Store(next)
	return true
}

// movePending moves one record of input x with timestamp ts from audited
// to pending: the check found its repartition copy still unprocessed
// (pending at the second hop).
func (t *timeline) movePending(x int, ts int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := floorTo(clampTS(ts), t.width.Load())
	c := t.inputs[x][k]
	c.Audited--
	c.Pending++
	t.inputs[x][k] = c
}

// result returns the timeline under the inputs' names.
func (t *timeline) result(names []string) *finding.Timeline {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := &finding.Timeline{Bucket: time.Duration(t.width.Load()) * time.Millisecond, Inputs: map[string]map[int64]finding.BucketCounts{}}
	for x, m := range t.inputs {
		c := make(map[int64]finding.BucketCounts, len(m))
		for k, v := range m {
			if v != (finding.BucketCounts{}) {
				c[k] = v
			}
		}
		out.Inputs[names[x]] = c
	}
	return out
}
