package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// chartBuckets are the bucket widths the timeline chooses from: the
// smallest that is a multiple of the run's own bucket width and shows the
// audited span in at most maxChartBuckets buckets (a minute for an hour,
// fifteen minutes for a day). Neighbours differ by at most 3.5 times, so a
// chart has about 30 to 100 buckets.
var chartBuckets = []time.Duration{
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

// maxChartBuckets bounds the bars of the timeline.
const maxChartBuckets = 100

// The chart's geometry, in SVG user units.
const (
	chartW      = 1000.0
	chartLeft   = 64.0
	chartRight  = 990.0
	auditTop    = 28.0
	auditH      = 150.0
	lossTop     = 206.0
	lossH       = 80.0
	axisY       = lossTop + lossH + 16
	chartH      = axisY + 10
	minBarH     = 2.0
	maxLossRows = 8 // series with their own colour; more share the last
)

// timelineView is the timeline chart: audited and pending records per
// bucket above, lost updates per bucket by stage and kind below.
type timelineView struct {
	W, H            float64
	BucketMS        int64
	BucketText      string
	From, To        string
	Buckets         []timelineBucket
	AuditTicks      []chartTick
	LossTicks       []chartTick
	XTicks          []chartTick
	Window          []chartMark
	WindowNote      string
	Series          []lossSeries
	LostTotal       int64
	LostBuckets     int
	PartitionNote   string
	NoCounts        bool
	PlotL, PlotR    float64
	AuditY, AuditB  float64
	LossY, LossB    float64
	AxisY, BandH    float64
	AuditLabelY     float64
	LossLabelY      float64
	TickX, TickY    float64
	LossFrom        string
	LossTo          string
	AuditMax        int64
	LossMax         int64
	HasPending      bool
	PendingInChart  int64
	AuditedInChart  int64
	OutsideRowCount int
}

type timelineBucket struct {
	Start            string
	StartMS          int64
	X, W             float64
	BarX, BarW       float64
	Audited, Pending int64
	Lost             int64
	AuditY, AuditH   float64
	PendY, PendH     float64
	Segs             []lossSeg
	Title            string
}

type lossSeg struct {
	Class string
	Y, H  float64
	N     int64
}

type chartTick struct {
	X, Y  float64
	Label string
}

type chartMark struct {
	X     float64
	Label string
}

// lossSeries is one (stage, kind) of lost updates, with its colour class.
type lossSeries struct {
	Stage finding.Stage
	Kind  finding.Kind
	Class string
	Label string
	N     int64
}

// newTimelineView lays out the timeline of res, with the record counts of
// tl (nil: none kept); nil when there is nothing to chart (no audited
// record and no finding row).
func newTimelineView(res *finding.Result, tl *finding.Timeline) *timelineView {
	fine, counts := timelineCounts(tl)
	lo, hi, found := timelineSpan(res.Rows, counts, fine)
	if !found {
		return nil
	}
	v := &timelineView{W: chartW, H: chartH, NoCounts: counts == nil}
	marks := v.windowMarks(res.Summary.Window, &lo, &hi)
	d := chartBucket(fine, lo, hi)
	first, last := floorMS(lo, d), floorMS(hi, d)
	n := int((last-first)/d) + 1
	bw := v.layout(first, last, d, n)
	buckets := newBuckets(first, d, n, bw)
	v.addCounts(buckets, counts, first, d)
	lost := v.addLosses(buckets, res.Rows, first, d)
	v.drawBars(buckets, lost, d)
	v.Buckets = buckets
	v.XTicks = timeTicks(first, d, n, bw)
	for _, m := range marks {
		v.Window = append(v.Window, chartMark{X: round1(chartLeft + float64(m.ms-first)/float64(int64(n)*d)*(chartRight-chartLeft)), Label: m.label})
	}
	v.PartitionNote = partitionNote(res.Summary.Partitions)
	return v
}

// timelineCounts sums the inputs' counts of tl by bucket start; fine is
// the width of its buckets (ms). nil counts when tl kept none.
func timelineCounts(tl *finding.Timeline) (fine int64, counts map[int64]finding.BucketCounts) {
	if tl == nil || tl.Bucket < time.Millisecond {
		return 1, nil
	}
	counts = map[int64]finding.BucketCounts{}
	for _, m := range tl.Inputs {
		for k, c := range m {
			o := counts[k]
			o.Audited += c.Audited
			o.Pending += c.Pending
			counts[k] = o
		}
	}
	return tl.Bucket.Milliseconds(), counts
}

// timelineSpan returns the time span (ms) of the counted records and the
// rows; found is false when there are neither.
func timelineSpan(rows []finding.Row, counts map[int64]finding.BucketCounts, fine int64) (lo, hi int64, found bool) {
	lo, hi = int64(math.MaxInt64), int64(math.MinInt64)
	note := func(from, to int64) {
		lo, hi, found = min(lo, from), max(hi, to), true
	}
	for k, c := range counts {
		if c.Audited != 0 || c.Pending != 0 {
			note(k, k+fine-1)
		}
	}
	for i := range rows {
		note(rows[i].Timestamp, rows[i].Timestamp)
	}
	return lo, hi, found
}

// windowMark is a bound of the audit window drawn on the chart.
type windowMark struct {
	ms    int64
	label string
}

// windowMarks returns the bounds of the audit window w to draw, widening
// the span lo..hi to them; a bound that would more than double the span is
// not drawn but named in WindowNote.
func (v *timelineView) windowMarks(w finding.Window, lo, hi *int64) []windowMark {
	span := *hi - *lo + 1
	var marks []windowMark
	var far []string
	for _, b := range []struct {
		t     time.Time
		label string
	}{{w.From, "window from"}, {w.To, "window to"}} {
		if b.t.IsZero() {
			continue
		}
		ms := b.t.UnixMilli()
		if (ms < *lo && *lo-ms > span) || (ms > *hi && ms-*hi > span) {
			far = append(far, b.label+" "+formatTime(b.t))
			continue
		}
		marks = append(marks, windowMark{ms, b.label})
		*lo, *hi = min(*lo, ms), max(*hi, ms)
	}
	if len(far) > 0 {
		v.WindowNote = "The audit window reaches far beyond the records (" + strings.Join(far, ", ") + "); the chart shows the records' span."
	}
	return marks
}

// layout sets the chart's bucket width d (ms), its n buckets from first
// and its geometry; it returns the width of a bucket.
func (v *timelineView) layout(first, last, d int64, n int) float64 {
	v.BucketMS, v.BucketText = d, durationText(time.Duration(d)*time.Millisecond)
	v.From, v.To = FormatTS(first), FormatTS(last+d)
	v.PlotL, v.PlotR = chartLeft, chartRight
	v.AuditY, v.AuditB, v.LossY, v.LossB = auditTop, auditTop+auditH, lossTop, lossTop+lossH
	v.AxisY, v.BandH = axisY, lossTop+lossH-auditTop
	v.AuditLabelY, v.LossLabelY = auditTop-10, lossTop-10
	v.TickX, v.TickY = chartLeft-6, lossTop+lossH+4
	return (chartRight - chartLeft) / float64(n)
}

// newBuckets returns the n empty buckets of width d from first, bw wide.
func newBuckets(first, d int64, n int, bw float64) []timelineBucket {
	buckets := make([]timelineBucket, n)
	for i := range buckets {
		start := first + int64(i)*d
		x := chartLeft + float64(i)*bw
		gap := min(bw*0.2, 4)
		buckets[i] = timelineBucket{Start: FormatTS(start), StartMS: start, X: round1(x), W: round1(bw),
			BarX: round1(x + gap/2), BarW: round1(max(bw-gap, 0.5))}
	}
	return buckets
}

// addCounts adds the record counts to their buckets.
func (v *timelineView) addCounts(buckets []timelineBucket, counts map[int64]finding.BucketCounts, first, d int64) {
	for k, c := range counts {
		if c.Audited == 0 && c.Pending == 0 {
			continue
		}
		b := &buckets[(floorMS(k, d)-first)/d]
		b.Audited += c.Audited
		b.Pending += c.Pending
		v.AuditedInChart += c.Audited
		v.PendingInChart += c.Pending
	}
	v.HasPending = v.PendingInChart > 0
}

// seriesKey is one series of lost updates: a stage and a kind.
type seriesKey struct {
	stage finding.Stage
	kind  finding.Kind
}

// addLosses counts the rows by bucket and series (stage in pipeline order,
// then kind), setting the series; it returns the counts per bucket and
// series index.
func (v *timelineView) addLosses(buckets []timelineBucket, rows []finding.Row, first, d int64) [][]int64 {
	perSeries := map[seriesKey]int64{}
	for i := range rows {
		perSeries[seriesKey{rows[i].Stage, rows[i].Kind}]++
	}
	keys := slices.Collect(maps.Keys(perSeries))
	slices.SortFunc(keys, func(a, b seriesKey) int {
		if c := cmp.Compare(a.stage.Order(), b.stage.Order()); c != 0 {
			return c
		}
		if c := cmp.Compare(a.stage, b.stage); c != 0 {
			return c
		}
		return cmp.Compare(kindRank(a.kind), kindRank(b.kind))
	})
	index := map[seriesKey]int{}
	for i, k := range keys {
		index[k] = i
		v.Series = append(v.Series, lossSeries{Stage: k.stage, Kind: k.kind, Class: fmt.Sprintf("s%d", min(i, maxLossRows-1)),
			Label: safe(string(k.stage)) + " · " + safe(string(k.kind)), N: perSeries[k]})
	}
	lost := make([][]int64, len(buckets))
	lossLo, lossHi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range rows {
		r := &rows[i]
		lossLo, lossHi = min(lossLo, r.Timestamp), max(lossHi, r.Timestamp)
		x := (floorMS(r.Timestamp, d) - first) / d
		if lost[x] == nil {
			lost[x] = make([]int64, len(keys))
		}
		lost[x][index[seriesKey{r.Stage, r.Kind}]]++
		buckets[x].Lost++
		v.LostTotal++
	}
	if v.LostTotal > 0 {
		v.LossFrom, v.LossTo = FormatTS(lossLo), FormatTS(lossHi)
	}
	return lost
}

// drawBars scales both panels and sizes each bucket's bars and loss
// segments.
func (v *timelineView) drawBars(buckets []timelineBucket, lost [][]int64, d int64) {
	for i := range buckets {
		v.AuditMax = max(v.AuditMax, buckets[i].Audited+buckets[i].Pending)
		v.LossMax = max(v.LossMax, buckets[i].Lost)
	}
	auditTopN, auditTicks := niceScale(v.AuditMax)
	lossTopN, lossTicks := niceScale(v.LossMax)
	for _, t := range auditTicks {
		v.AuditTicks = append(v.AuditTicks, chartTick{Y: round1(v.AuditB - float64(t)/float64(auditTopN)*auditH), Label: Thousands(t)})
	}
	for _, t := range lossTicks {
		v.LossTicks = append(v.LossTicks, chartTick{Y: round1(v.LossB - float64(t)/float64(lossTopN)*lossH), Label: Thousands(t)})
	}
	barH := func(n, top int64, full float64) float64 {
		if n <= 0 {
			return 0
		}
		return round1(max(minBarH, float64(n)/float64(top)*full))
	}
	for i := range buckets {
		b := &buckets[i]
		b.AuditH = barH(b.Audited, auditTopN, auditH)
		b.AuditY = round1(v.AuditB - b.AuditH)
		b.PendH = barH(b.Pending, auditTopN, auditH)
		b.PendY = round1(b.AuditY - b.PendH)
		y := v.LossB
		for si, c := range lost[i] {
			if c == 0 {
				continue
			}
			h := barH(c, lossTopN, lossH)
			y -= h
			b.Segs = append(b.Segs, lossSeg{Class: v.Series[si].Class, Y: round1(y), H: h, N: c})
		}
		if b.Lost > 0 {
			v.LostBuckets++
		}
		b.Title = bucketTitle(b, d, lost[i], v.Series)
	}
}

// partitionNote says that the partition findings are not on the chart;
// "" when there are none.
func partitionNote(pf []finding.PartitionFinding) string {
	np := len(pf)
	if np == 0 {
		return ""
	}
	verb, be := "carry", "are"
	if np == 1 {
		verb, be = "carries", "is"
	}
	return fmt.Sprintf("%s (%s) %s no timestamp and %s not on the chart: see Partition findings below.",
		plural(int64(np), "partition finding", "partition findings"), partitionKindCounts(pf), verb, be)
}

// chartBucket chooses the bucket width (ms) for the span lo..hi of data
// counted in fine-wide buckets.
func chartBucket(fine, lo, hi int64) int64 {
	fits := func(d int64) bool { return (floorMS(hi, d)-floorMS(lo, d))/d < maxChartBuckets }
	for _, c := range chartBuckets {
		d := c.Milliseconds()
		if d >= fine && d%fine == 0 && fits(d) {
			return d
		}
	}
	d := max(fine, chartBuckets[len(chartBuckets)-1].Milliseconds())
	for !fits(d) && d < math.MaxInt64/4 {
		d *= 2
	}
	return d
}

// floorMS returns the start of the d-wide bucket holding ms.
func floorMS(ms, d int64) int64 {
	q := ms / d
	if ms%d != 0 && ms < 0 {
		q--
	}
	return q * d
}

// niceScale returns the top of an axis showing values up to n, with its
// ticks (0 included): steps of 1, 2 or 5 times a power of ten.
func niceScale(n int64) (int64, []int64) {
	if n <= 0 {
		return 1, []int64{0}
	}
	step := int64(1)
	for n/step > 4 {
		switch m := step; {
		case isPow10(m):
			step = 2 * m
		case isPow10(m / 2):
			step = m / 2 * 5
		default:
			step = m / 5 * 10
		}
	}
	top := (n + step - 1) / step * step
	var ticks []int64
	for t := int64(0); t <= top; t += step {
		ticks = append(ticks, t)
	}
	return top, ticks
}

func isPow10(n int64) bool {
	for n >= 10 && n%10 == 0 {
		n /= 10
	}
	return n == 1
}

// timeTicks labels the time axis at round times, at most about ten.
func timeTicks(first, d int64, n int, bw float64) []chartTick {
	span := int64(n) * d
	step := d
	for _, c := range chartBuckets {
		if s := c.Milliseconds(); s >= d && s%d == 0 && span/s <= 10 {
			step = s
			break
		}
	}
	for span/step > 10 {
		step *= 2
	}
	layout := "15:04"
	switch {
	case step < int64(time.Second/time.Millisecond):
		layout = "15:04:05.000"
	case step < int64(time.Minute/time.Millisecond):
		layout = "15:04:05"
	case step >= int64(24*time.Hour/time.Millisecond):
		layout = "Jan 2"
	}
	var ticks []chartTick
	prevDay := ""
	for t := floorMS(first, step); t <= first+span; t += step {
		if t < first {
			continue
		}
		tm := time.UnixMilli(t).UTC()
		label := tm.Format(layout)
		if day := tm.Format("Jan 2"); layout != "Jan 2" && day != prevDay {
			if prevDay != "" || t == first {
				label = day + " " + label
			}
			prevDay = day
		}
		x := chartLeft + float64(t-first)/float64(d)*bw
		ticks = append(ticks, chartTick{X: round1(x), Label: label})
	}
	return ticks
}

// bucketTitle is the tooltip of one bucket.
func bucketTitle(b *timelineBucket, d int64, lost []int64, series []lossSeries) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s to %s UTC: %s audited", FormatTS(b.StartMS), FormatTS(b.StartMS+d), Thousands(b.Audited))
	if b.Pending > 0 {
		fmt.Fprintf(&sb, ", %s pending", Thousands(b.Pending))
	}
	if b.Lost > 0 {
		var parts []string
		for i, c := range lost {
			if c > 0 {
				parts = append(parts, Thousands(c)+" "+series[i].Label)
			}
		}
		fmt.Fprintf(&sb, "; %s lost (%s)", Thousands(b.Lost), strings.Join(parts, ", "))
	}
	return sb.String()
}

// kindRank orders kinds as reports list them, unknown kinds last.
func kindRank(k finding.Kind) int {
	if i := slices.Index(finding.Kinds, k); i >= 0 {
		return i
	}
	return len(finding.Kinds)
}

// durationText renders a bucket width: "100 ms", "5 s", "10 min", "6 h",
// "7 days".
func durationText(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute && d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second)
	case d < time.Hour && d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	case d < 24*time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d%(24*time.Hour) == 0:
		return plural(int64(d/(24*time.Hour)), "day", "days")
	}
	return d.String()
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
