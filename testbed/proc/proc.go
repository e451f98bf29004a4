// Package proc supervises the testbed's child processes (the Kafka brokers
// and the Kafka Streams application): it starts one with its output
// appended to a log file, reaps it in the background, and stops it cleanly
// or kills it, waiting until it is gone.
package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is one supervised child process, started again after each exit
// if asked. The zero value is ready to use; it is safe for concurrent use.
type Process struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process has exited
}

// Start starts cmd, named name in errors. The caller has pointed cmd's
// output at log, which is closed when the process exits (or Start fails).
// Starting a process that is still running is an error.
func (p *Process) Start(name string, cmd *exec.Cmd, log io.Closer) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		log.Close()
		return fmt.Errorf("starting %s: already running (pid %d)", name, p.cmd.Process.Pid)
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		_ = cmd.Wait()
		log.Close()
		p.mu.Lock()
		if p.cmd == cmd {
			p.cmd = nil
		}
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Running reports whether the process is alive.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Signal sends sig and waits up to wait for the process to exit; past
// that it kills it (SIGKILL) and says so, unless sig was SIGKILL already.
// A process that is not running is not an error.
func (p *Process) Signal(name string, sig syscall.Signal, wait time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling %s with %v: %w", name, sig, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(wait):
	}
	_ = cmd.Process.Kill()
	<-done
	if sig == syscall.SIGKILL {
		return nil
	}
	return fmt.Errorf("%s did not stop within %v after %v; killed", name, wait, sig)
}

// Send sends sig without waiting for anything (SIGSTOP, SIGCONT). A
// process that is not running is an error.
func (p *Process) Send(name string, sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("signalling %s with %v: not running", name, sig)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signalling %s with %v: %w", name, sig, err)
	}
	return nil
}

// KillNow sends SIGKILL without waiting, so that several processes can be
// killed at the same instant (Signal then waits for each).
func (p *Process) KillNow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		_ = p.cmd.Process.Kill()
	}
}
