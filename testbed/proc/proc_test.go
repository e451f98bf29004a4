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
	time.Sleep(200 * time.Millisecond)
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
	start(t, &p, `trap '' TERM; while :; do sleep 0.05; done`)
	time.Sleep(100 * time.Millisecond)
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
