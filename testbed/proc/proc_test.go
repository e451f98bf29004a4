package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func start(t *testing.T, p *Process, script string) string {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "out.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := p.Start("child", cmd, logf); err != nil {
		t.Fatal(err)
	}
	return logPath
}

// waitLog waits until the child's log holds s: the child writes it once it
// has set up what the test is about to exercise (its signal handler).
func waitLog(t *testing.T, p *Process, logPath, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if out, err := os.ReadFile(logPath); err == nil && strings.Contains(string(out), s) {
			return
		}
		if !p.Running() {
			out, _ := os.ReadFile(logPath)
			t.Fatalf("child exited before writing %q; log %q", s, out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("child did not write %q within 30s", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStopKillRestart(t *testing.T) {
	var p Process
	if p.Running() {
		t.Fatal("zero Process reports running")
	}
	// A child that exits cleanly on SIGTERM.
	log := start(t, &p, `trap 'echo bye; exit 0' TERM; echo hello; while :; do sleep 0.05; done`)
	if !p.Running() {
		t.Fatal("not running after Start")
	}
	if err := p.Start("child", exec.Command("true"), os.Stdout); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Start: %v, want already running", err)
	}
	waitLog(t, &p, log, "hello") // echoed after the trap is installed
	if err := p.Signal("child", syscall.SIGTERM, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Error("running after SIGTERM returned")
	}
	if out, _ := os.ReadFile(log); !strings.Contains(string(out), "hello") || !strings.Contains(string(out), "bye") {
		t.Errorf("log %q lacks the child's output", out)
	}
	// Started again; one that ignores SIGTERM is killed after the wait, and
	// Signal says so.
	log = start(t, &p, `trap '' TERM; echo ignoring; while :; do sleep 0.05; done`)
	waitLog(t, &p, log, "ignoring")
	err := p.Signal("child", syscall.SIGTERM, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not stop") {
		t.Errorf("ignored SIGTERM: %v, want did not stop", err)
	}
	if p.Running() {
		t.Error("running after being killed")
	}
	// KillNow, then Signal(SIGKILL) waits for it.
	start(t, &p, `while :; do sleep 0.05; done`)
	p.KillNow()
	if err := p.Signal("child", syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Error("running after KillNow + Signal")
	}
	if err := p.Signal("child", syscall.SIGTERM, time.Second); err != nil {
		t.Errorf("Signal to a stopped process: %v, want nil", err)
	}
}
