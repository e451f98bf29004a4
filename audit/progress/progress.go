// Package progress reports the progress of long scans on a terminal or a
// log: per phase ("inputs", "changelogs", ...) the records and bytes done,
// out of a total when it is known, the rate and the time left.
//
// Counters are updated lock-free from any goroutine (Phase.Add). A single
// goroutine renders them every Interval: on a terminal as one line rewritten
// in place with '\r', otherwise as a plain line every PlainEvery, so logs
// stay readable. A finished phase gets a line of its own. Stop ends the
// rendering goroutine, waits for it, and prints a final line.
//
//	p := progress.New(os.Stderr, progress.Options{TTY: isTerminal})
//	ph := p.Phase("inputs", totalOffsets)
//	ph.Add(n, bytes) // from any goroutine
//	ph.Done()
//	p.Stop()
//
// Units are the caller's: for reads of offset ranges the natural total is
// the sum of (To - From) and Add counts offsets consumed, so that
// transaction markers and aborted records (which take offsets) do not leave
// the bar short of 100%.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Options configure a Progress. The zero value renders plain lines every
// 10 s using the real clock.
type Options struct {
	// TTY rewrites one status line in place ('\r') every Interval; the
	// caller decides, typically by whether the writer is a terminal.
	TTY bool
	// Quiet prints nothing at all; counters still count.
	Quiet bool
	// Interval is how often counters are looked at (default 1s).
	Interval time.Duration
	// PlainEvery is how often a plain (non-TTY) status line is printed
	// (default 10s).
	PlainEvery time.Duration
	// Width bounds the TTY status line, which must not wrap or '\r'
	// cannot rewrite it (default 80 columns).
	Width int
	// Now is the clock (default time.Now); for tests.
	Now func() time.Time
	// Ticks, when set, drives rendering instead of a ticker every
	// Interval; for tests.
	Ticks <-chan time.Time
}

// Progress renders the phases of one run. Its methods are safe for
// concurrent use.
type Progress struct {
	w     io.Writer
	o     Options
	start time.Time

	mu     sync.Mutex // guards phases, and all writes to w
	phases []*Phase
	// Rendering state, used under mu.
	lastLen   int       // runes of the TTY line currently shown
	lastPlain time.Time // when the last plain line was printed

	stop     chan struct{}
	exited   chan struct{}
	stopOnce sync.Once
}

// Phase is one step of a run with its own counters.
type Phase struct {
	name    string
	now     func() time.Time
	start   time.Time
	records atomic.Int64
	bytes   atomic.Int64
	total   atomic.Int64
	doneAt  atomic.Int64 // Unix nanoseconds when Done was called; 0 = running
	printed bool         // its finished line was written; under Progress.mu
}

// New starts a Progress writing to w (normally os.Stderr). Unless
// o.Quiet, it starts one rendering goroutine that Stop ends.
func New(w io.Writer, o Options) *Progress {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.PlainEvery <= 0 {
		o.PlainEvery = 10 * time.Second
	}
	if o.Width <= 0 {
		o.Width = 80
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Progress{w: w, o: o, stop: make(chan struct{}), exited: make(chan struct{})}
	p.start = o.Now()
	p.lastPlain = p.start
	if o.Quiet {
		close(p.exited)
		return p
	}
	ticks, stopTicker := o.Ticks, func() {}
	if ticks == nil {
		t := time.NewTicker(o.Interval)
		ticks, stopTicker = t.C, t.Stop
	}
	go p.loop(ticks, stopTicker)
	return p
}

// Phase starts a phase named name with total units of work; total <= 0
// means unknown (no percentage or ETA until SetTotal).
func (p *Progress) Phase(name string, total int64) *Phase {
	ph := &Phase{name: name, now: p.o.Now, start: p.o.Now()}
	ph.total.Store(total)
	p.mu.Lock()
	p.phases = append(p.phases, ph)
	p.mu.Unlock()
	return ph
}

// Add counts n more units (records or offsets) and b more bytes done.
func (ph *Phase) Add(n, b int64) {
	ph.records.Add(n)
	ph.bytes.Add(b)
}

// SetTotal sets the phase's total once it is known.
func (ph *Phase) SetTotal(total int64) { ph.total.Store(total) }

// Counts returns the units and bytes done so far.
func (ph *Phase) Counts() (n, b int64) { return ph.records.Load(), ph.bytes.Load() }

// Done marks the phase finished; its final line is printed at the next
// render or by Stop. Calling Done again has no effect.
func (ph *Phase) Done() {
	ph.doneAt.CompareAndSwap(0, max(1, ph.now().UnixNano()))
}

// Stop stops rendering, waits for the rendering goroutine to exit, and
// prints each finished phase not printed yet and a final line. Phases still
// running are shown as stopped. Calling Stop again has no effect.
func (p *Progress) Stop() {
	p.stopOnce.Do(func() {
		close(p.stop)
		<-p.exited
		if p.o.Quiet {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		now := p.o.Now()
		p.printFinished(now)
		p.clearLine()
		stopped := 0
		for _, ph := range p.phases {
			if ph.doneAt.Load() == 0 {
				stopped++
				p.writeLine(ph.status(now, "stopped at "))
			}
		}
		elapsed := fmtDur(now.Sub(p.start))
		if stopped > 0 {
			p.writeLine(fmt.Sprintf("progress: stopped after %s with %d phase(s) unfinished", elapsed, stopped))
		} else {
			p.writeLine(fmt.Sprintf("progress: finished in %s", elapsed))
		}
	})
}

// Log returns a writer for messages that must not be garbled by the status
// line (e.g. for log.New or slog.NewTextHandler): each Write clears the TTY
// status line, writes the message to the Progress's writer, and the next
// render redraws the status. Messages are written in quiet mode too.
func (p *Progress) Log() io.Writer { return logWriter{p} }

type logWriter struct{ p *Progress }

func (l logWriter) Write(b []byte) (int, error) {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	l.p.clearLine()
	return l.p.w.Write(b)
}

func (p *Progress) loop(ticks <-chan time.Time, stopTicker func()) {
	defer close(p.exited)
	defer stopTicker()
	for {
		select {
		case <-p.stop:
			return
		case <-ticks:
			p.tick()
		}
	}
}

// tick renders once: finished phases get their line, then the status of
// the running phases.
func (p *Progress) tick() {
	if p.o.Quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.o.Now()
	p.printFinished(now)
	var parts []string
	for _, ph := range p.phases {
		if ph.doneAt.Load() == 0 {
			parts = append(parts, ph.status(now, ""))
		}
	}
	prefix := "[" + fmtDur(now.Sub(p.start)) + "] "
	if p.o.TTY {
		line := ""
		if len(parts) > 0 {
			line = truncate(prefix+strings.Join(parts, " | "), p.o.Width-1)
		}
		p.rewrite(line)
		return
	}
	if len(parts) > 0 && now.Sub(p.lastPlain) >= p.o.PlainEvery {
		p.lastPlain = now
		for _, s := range parts {
			fmt.Fprintf(p.w, "%s%s\n", prefix, s)
		}
	}
}

// printFinished writes the line of every finished phase not printed yet.
func (p *Progress) printFinished(now time.Time) {
	for _, ph := range p.phases {
		if !ph.printed && ph.doneAt.Load() != 0 {
			ph.printed = true
			p.clearLine()
			p.writeLine(ph.finished())
		}
	}
}

// rewrite replaces the TTY status line with line, padding with spaces over
// what was there (no terminal escape codes needed).
func (p *Progress) rewrite(line string) {
	n := utf8.RuneCountInString(line)
	if n == 0 && p.lastLen == 0 {
		return
	}
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", max(0, p.lastLen-n)))
	p.lastLen = n
}

// clearLine blanks the TTY status line so a permanent line can be written.
func (p *Progress) clearLine() {
	if p.o.TTY && p.lastLen > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.lastLen))
		p.lastLen = 0
	}
}

func (p *Progress) writeLine(s string) { fmt.Fprintln(p.w, s) }

// status renders a running phase: "inputs 1,234/5,000 24.7% 1.2 MiB 45/s ETA 1m23s";
// verb is put before the counts ("stopped at ") and suppresses the ETA.
func (ph *Phase) status(now time.Time, verb string) string {
	n, b, total := ph.records.Load(), ph.bytes.Load(), ph.total.Load()
	elapsed := now.Sub(ph.start)
	var s strings.Builder
	s.WriteString(ph.name + " " + verb + thousands(n))
	if total > 0 {
		fmt.Fprintf(&s, "/%s %.1f%%", thousands(total), 100*float64(min(n, total))/float64(total))
	}
	fmt.Fprintf(&s, " %s", fmtBytes(b))
	if elapsed > 0 && n > 0 {
		rate := float64(n) / elapsed.Seconds()
		fmt.Fprintf(&s, " %s/s", thousands(int64(rate+0.5)))
		if total > n && verb == "" {
			left := time.Duration(float64(total-n) / rate * float64(time.Second))
			s.WriteString(" ETA " + fmtDur(left))
		}
	}
	return s.String()
}

// finished renders a finished phase: "inputs done: 5,000, 1.2 MiB in 1m50s (45/s)".
func (ph *Phase) finished() string {
	n, b := ph.records.Load(), ph.bytes.Load()
	took := time.Unix(0, ph.doneAt.Load()).Sub(ph.start)
	s := fmt.Sprintf("%s done: %s, %s in %s", ph.name, thousands(n), fmtBytes(b), fmtDur(took))
	if took > 0 {
		s += fmt.Sprintf(" (%s/s)", thousands(int64(float64(n)/took.Seconds()+0.5)))
	}
	return s
}

// fmtDur renders a duration for people: "0s", "42s", "12m03s", "2h03m".
func fmtDur(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	sec := int64(d.Round(time.Second) / time.Second)
	switch {
	case sec < 60:
		return fmt.Sprintf("%ds", sec)
	case sec < 3600:
		return fmt.Sprintf("%dm%02ds", sec/60, sec%60)
	}
	return fmt.Sprintf("%dh%02dm", sec/3600, sec%3600/60)
}

// fmtBytes renders a byte count in binary units: "512 B", "1.5 MiB".
func fmtBytes(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	v, i := float64(b)/unit, 0
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i])
}

// thousands renders n with comma separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// truncate cuts s to at most n runes.
func truncate(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
