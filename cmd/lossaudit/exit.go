package main

import (
	"errors"

	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// Exit codes of docs/reference.md.
const (
	// exitOK: audit complete, nothing missing.
	exitOK = 0
	// exitFindings: audit complete, findings reported.
	exitFindings = 1
	// exitUsage: usage or configuration error.
	exitUsage = 2
	// exitIncomplete: the audit could not complete.
	exitIncomplete = 3
)

// codeError carries an exit code through cobra back to run.
type codeError struct {
	code int
	err  error
	// concluded: the command finished its work (reports written, a
	// step committed) before returning; a signal that arrived meanwhile
	// does not turn the exit code into 128+signal (execute).
	concluded bool
}

func (e *codeError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *codeError) Unwrap() error { return e.err }

// withCode makes err end the process with code. err may be nil when the code
// alone says everything (e.g. exitFindings after the summary was printed);
// then nothing is written to stderr.
func withCode(code int, err error) error {
	return &codeError{code: code, err: err}
}

// concluded is withCode for a command that finished its work: the verdict
// of a complete run, or a run whose reports were written. Its code stands
// even when a signal arrived while it finished.
func concluded(code int, err error) error {
	return &codeError{code: code, err: err, concluded: true}
}

// watchStopped is what watch returns when a signal stops it: the steps it
// completed stand, the one cut short wrote nothing (execute says so).
type watchStopped struct{}

func (watchStopped) Error() string { return "watch stopped" }

// usageError is an error cobra reported before a command's RunE started:
// an unknown command or flag, a bad flag value, wrong arguments.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// exitCode maps the error a command returned to the process exit code:
// nil -> 0; withCode -> its code; *config.Error, a usage error or a
// topology node the audit does not support (*topology.UnsupportedError) -> 2;
// anything else -> 3 (the audit could not complete).
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	var cfgErr *config.Error
	if errors.As(err, &cfgErr) {
		return exitUsage
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var unsupported *topology.UnsupportedError
	if errors.As(err, &unsupported) {
		return exitUsage
	}
	return exitIncomplete
}
