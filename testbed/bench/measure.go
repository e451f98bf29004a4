package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

// result is one timed reader run.
type result struct {
	Name    string
	Command string
	Wall    time.Duration
	MaxRSS  int64 // bytes, the largest of the runs' processes
	// CPU is the user and system CPU time of the run's processes (wait4
	// rusage): on a shared machine it moves far less than Wall.
	CPU     time.Duration
	Records int64 // records the reader had to read
	Bytes   int64 // key+value bytes of those records
	Note    string
	// Index is what the run's report says it kept on disk: the records it
	// read and the index entries it wrote for them (zero for raw readers).
	Index indexStats
}

// indexStats is the "index" object of lossaudit's JSON report.
type indexStats struct {
	RecordsRead int64 `json:"records_read"`
	Entries     int64 `json:"entries"`
}

// entriesPerRecord renders the index entries written per record read, or
// "" when the run has none to say.
func (r result) entriesPerRecord() string {
	if r.Index.RecordsRead == 0 {
		return ""
	}
	return fmt.Sprintf("%.3f", float64(r.Index.Entries)/float64(r.Index.RecordsRead))
}

func (r result) recPerSec() float64 { return float64(r.Records) / r.Wall.Seconds() }
func (r result) mbPerSec() float64  { return float64(r.Bytes) / (1 << 20) / r.Wall.Seconds() }

// timed runs a command, returning its wall time and peak RSS (wait4
// rusage ru_maxrss of the child). stdout goes to out.
func timed(ctx context.Context, out io.Writer, env []string, name string, args ...string) (time.Duration, int64, error) {
	wall, rss, _, err := timedCPU(ctx, out, env, name, args...)
	return wall, rss, err
}

// timedCPU is timed that also returns the child's user and system CPU time.
func timedCPU(ctx context.Context, out io.Writer, env []string, name string, args ...string) (time.Duration, int64, time.Duration, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(testbedenv.Strip(os.Environ()), env...)
	cmd.Stdout = out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var rss int64
	var cpu time.Duration
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss << 10 // kilobytes on Linux
		}
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		tail := stderr.String()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return wall, rss, cpu, &exitError{err: fmt.Errorf("%s %v: %w\n%s", name, args, err, tail), code: exitCode(err)}
	}
	return wall, rss, cpu, nil
}

// exitError keeps a child's exit code.
type exitError struct {
	err  error
	code int
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// lineCounter counts newlines written to it.
type lineCounter struct{ n int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// kcatRead reads every topic with kcat (one process per topic, one after
// the other), printing only each record's value size.
func kcatRead(ctx context.Context, brokers string, topics []string, want int64) (time.Duration, int64, time.Duration, error) {
	var total, cpu time.Duration
	var peak int64
	lc := &lineCounter{}
	for _, t := range topics {
		wall, rss, c, err := timedCPU(ctx, lc, nil, "kcat", "-C", "-b", brokers, "-t", t, "-o", "beginning", "-e", "-q",
			"-X", "isolation.level=read_committed", "-f", "%S\n")
		total += wall
		cpu += c
		peak = max(peak, rss)
		if err != nil {
			return total, peak, cpu, err
		}
	}
	if lc.n != want {
		return total, peak, cpu, fmt.Errorf("kcat read %d records, want %d", lc.n, want)
	}
	return total, peak, cpu, nil
}

// rawReadReport is what the rawread subcommand prints.
type rawReadReport struct {
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
}

// rawRead is the minimal franz-go consumer: one client, every topic from
// the beginning, read_committed, default fetch settings; it stops once it
// has seen want records.
func rawRead(ctx context.Context, brokers []string, topics []string, want int64, stdout io.Writer) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return err
	}
	defer cl.Close()
	var rep rawReadReport
	idle := time.Now()
	for rep.Records < want {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
				ferr = fmt.Errorf("fetching %s[%d]: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		n := int64(0)
		fs.EachRecord(func(r *kgo.Record) {
			n++
			rep.Bytes += int64(len(r.Key) + len(r.Value))
		})
		rep.Records += n
		if n > 0 {
			idle = time.Now()
		} else if time.Since(idle) > 30*time.Second {
			return fmt.Errorf("no record for 30s after %d of %d", rep.Records, want)
		}
	}
	return json.NewEncoder(stdout).Encode(rep)
}

// selfRead runs the rawread subcommand of this binary as a child, so its
// RSS is its own.
func selfRead(ctx context.Context, brokers string, topics []string, want int64) (time.Duration, int64, time.Duration, rawReadReport, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, 0, rawReadReport{}, err
	}
	var out bytes.Buffer
	args := []string{"rawread", "-brokers", brokers, "-want", fmt.Sprint(want)}
	for _, t := range topics {
		args = append(args, "-topic", t)
	}
	wall, rss, cpu, err := timedCPU(ctx, &out, nil, self, args...)
	var rep rawReadReport
	if err == nil {
		err = json.Unmarshal(out.Bytes(), &rep)
	}
	return wall, rss, cpu, rep, err
}
