package progress

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name string, got string) {
	t.Helper()
	// Make carriage returns visible so the golden files can be read.
	got = strings.ReplaceAll(got, "\r", "<CR>")
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (go test -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update to accept)\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// lockedBuffer is a bytes.Buffer safe for the renderer and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// script runs the same scan in every mode, rendering by calling tick
// directly (the Ticks channel never fires), so output is deterministic.
func script(t *testing.T, o Options) string {
	clk := &fakeClock{t: time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)}
	var out lockedBuffer
	o.Now = clk.Now
	o.Ticks = make(chan time.Time) // never fires
	p := New(&out, o)
	inputs := p.Phase("inputs", 1000)
	clk.Advance(time.Second)
	inputs.Add(100, 100<<10)
	p.tick() // 1s: TTY line; too early for a plain line
	clk.Advance(4 * time.Second)
	inputs.Add(150, 150<<10)
	p.tick() // 5s: 250/1000 at 50/s, ETA 15s
	clk.Advance(5 * time.Second)
	inputs.Add(250, 3<<20)
	logs := p.Phase("changelogs", 0)
	p.tick() // 10s: plain line due
	clk.Advance(10 * time.Second)
	inputs.Add(500, 1<<30)
	inputs.Done()
	logs.Add(12345, 4567)
	p.tick() // 20s: inputs finished line, changelogs status
	clk.Advance(3 * time.Minute)
	logs.Add(10, 10)
	p.tick() // 3m20s
	p.Stop()
	return out.String()
}

func TestRenderGolden(t *testing.T) {
	tests := []struct {
		name   string
		o      Options
		golden string
	}{
		{"tty", Options{TTY: true}, "tty.txt"},
		{"plain", Options{}, "plain.txt"},
		{"narrow tty", Options{TTY: true, Width: 40}, "tty-narrow.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.golden, script(t, tt.o))
		})
	}
}

func TestQuiet(t *testing.T) {
	if got := script(t, Options{Quiet: true, TTY: true}); got != "" {
		t.Fatalf("quiet mode wrote %q", got)
	}
}

func TestStatus(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		total, n, b int64
		elapsed     time.Duration
		want        string
	}{
		{"quarter done", 1000, 250, 0, 5 * time.Second, "in 250/1,000 25.0% 0 B 50/s ETA 15s"},
		{"unknown total", 0, 1234567, 1536, 10 * time.Second, "in 1,234,567 1.5 KiB 123,457/s"},
		{"nothing yet", 1000, 0, 0, 5 * time.Second, "in 0/1,000 0.0% 0 B"},
		{"past total (markers)", 100, 130, 0, time.Second, "in 130/100 100.0% 0 B 130/s"},
		{"long ETA", 10_000_000, 1000, 0, 10 * time.Second, "in 1,000/10,000,000 0.0% 0 B 100/s ETA 27h46m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ph := &Phase{name: "in", start: start}
			ph.total.Store(tt.total)
			ph.Add(tt.n, tt.b)
			if got := ph.status(start.Add(tt.elapsed), ""); got != tt.want {
				t.Errorf("status = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFormatters(t *testing.T) {
	durs := map[time.Duration]string{0: "0s", -time.Second: "0s", 1499 * time.Millisecond: "1s", 59 * time.Second: "59s",
		61 * time.Second: "1m01s", time.Hour - time.Second: "59m59s", 2*time.Hour + 3*time.Minute + 59*time.Second: "2h03m"}
	for d, want := range durs {
		if got := fmtDur(d); got != want {
			t.Errorf("fmtDur(%v) = %q, want %q", d, got, want)
		}
	}
	sizes := map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 40: "3.0 TiB"}
	for b, want := range sizes {
		if got := fmtBytes(b); got != want {
			t.Errorf("fmtBytes(%d) = %q, want %q", b, got, want)
		}
	}
	nums := map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"}
	for n, want := range nums {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTicksDriveRendering goes through the rendering goroutine.
func TestTicksDriveRendering(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	ticks := make(chan time.Time)
	var out lockedBuffer
	p := New(&out, Options{TTY: true, Now: clk.Now, Ticks: ticks})
	ph := p.Phase("inputs", 10)
	ph.Add(5, 0)
	clk.Advance(time.Second)
	ticks <- time.Time{}
	ticks <- time.Time{} // accepted only once the first render is complete
	if got := out.String(); !strings.Contains(got, "\r[1s] inputs 5/10 50.0% 0 B 5/s ETA 1s") {
		t.Fatalf("no status line after a tick: %q", got)
	}
	p.Stop()
	if got := out.String(); !strings.HasSuffix(got, "progress: stopped after 1s with 1 phase(s) unfinished\n") {
		t.Fatalf("final line missing: %q", got)
	}
}

// TestConcurrentAddAndStop uses the real ticker: many goroutines count
// while the renderer reads; run with -race. Stop must leave no goroutine.
func TestConcurrentAddAndStop(t *testing.T) {
	before := runtime.NumGoroutine()
	var out lockedBuffer
	p := New(&out, Options{TTY: true, Interval: time.Millisecond})
	ph := p.Phase("inputs", 8*2000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				ph.Add(1, 10)
			}
		})
	}
	wg.Wait()
	ph.Done()
	ph.Done() // idempotent
	// Let the renderer run against the counters before stopping it.
	for deadline := time.Now().Add(30 * time.Second); out.String() == "" && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	p.Stop()
	p.Stop() // idempotent
	n, b := ph.Counts()
	if n != 16000 || b != 160000 {
		t.Fatalf("counts %d, %d, want 16000, 160000", n, b)
	}
	got := out.String()
	if strings.Count(got, "inputs done: 16,000, 156.2 KiB in ") != 1 {
		t.Errorf("want exactly one finished line for the phase: %q", got)
	}
	if !strings.Contains(got, "progress: finished in ") {
		t.Errorf("final line missing: %q", got)
	}
	ph.Add(1, 1) // after Stop: counts, prints nothing
	if out.String() != got {
		t.Error("output after Stop")
	}
	// Stop waited for the renderer; the ticker goroutine-free runtime
	// should be back at the goroutine count from before New.
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Stop, %d before New", n, before)
	}
}

func TestLogClearsStatusLine(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"tty", Options{TTY: true}, "<CR>[1s] in 1 0 B 1/s<CR>" + strings.Repeat(" ", len("[1s] in 1 0 B 1/s")) + "<CR>warning: slow broker\n<CR>[1s] in 1 0 B 1/s"},
		{"plain", Options{}, "warning: slow broker\n"},
		{"quiet", Options{Quiet: true}, "warning: slow broker\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(0, 0)}
			var out lockedBuffer
			tt.o.Now, tt.o.Ticks = clk.Now, make(chan time.Time)
			p := New(&out, tt.o)
			defer p.Stop()
			p.Phase("in", 0).Add(1, 0)
			clk.Advance(time.Second)
			p.tick()
			if _, err := io.WriteString(p.Log(), "warning: slow broker\n"); err != nil {
				t.Fatal(err)
			}
			p.tick()
			if got := strings.ReplaceAll(out.String(), "\r", "<CR>"); got != tt.want {
				t.Errorf("output %q, want %q", got, tt.want)
			}
		})
	}
}
