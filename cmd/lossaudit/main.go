// Command lossaudit audits Kafka Streams pipelines for lost records. See
// README.md for the commands, configuration and exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
)

// defaultMemoryLimit is the soft limit of the Go heap unless GOMEMLIMIT
// says otherwise. The audit's working set is bounded (fetch buffers, the
// index's sort chunks); without a limit the garbage collector lets the
// heap grow to twice the live data between cycles, and peak RSS with it
// (measured at 10M input records: ~1 GiB without, ~390 MiB with).
const defaultMemoryLimit = 384 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args, writing to stdout and stderr, and
// returns the process exit code. Errors are printed as one line
// `lossaudit: <message>`, never with a stack trace. The first SIGINT or
// SIGTERM cancels the command's context, so it stops cleanly (no report
// half written, the store reusable) and exits 128 + the signal number
// (130 for Ctrl-C); a second one kills the process at once.
func run(args []string, stdout, stderr io.Writer) int {
	return runTree(newRootCmd(stdout, stderr), args, stderr)
}

// runTree is run on the command tree root.
func runTree(root *cobra.Command, args []string, stderr io.Writer) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case sig := <-sigs:
			signal.Reset(os.Interrupt, syscall.SIGTERM) // a second signal kills
			cancel(&interrupted{sig: sig.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()
	return execute(ctx, root, args, stderr)
}

// interrupted is the cause of a context cancelled by a signal.
type interrupted struct{ sig syscall.Signal }

func (i *interrupted) Error() string { return "interrupted by " + signalName(i.sig) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// execute runs root with args and returns the exit code, printing the
// error, if any, to stderr. A command stopped by a signal before it could
// finish exits 128 + the signal's number with one line saying so, whatever
// error its cancelled work returned; one that finished anyway (a verdict or
// reports written while the signal came: concluded) keeps its own code.
func execute(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	err := classify(root.ExecuteContext(ctx))
	code := exitCode(err)
	var in *interrupted
	var done *codeError
	if err != nil && code != exitOK && code != exitFindings && errors.As(context.Cause(ctx), &in) &&
		!(errors.As(err, &done) && done.concluded) {
		if errors.As(err, &watchStopped{}) {
			fmt.Fprintf(stderr, "lossaudit: %s: watch stopped; the reports and state of every completed step stand, a step cut short wrote nothing\n", in)
		} else {
			fmt.Fprintf(stderr, "lossaudit: %s: stopped; no report of this run was written, earlier reports and the store directory are as they were\n", in)
		}
		return 128 + int(in.sig)
	}
	if err != nil && err.Error() != "" {
		fmt.Fprintf(stderr, "lossaudit: %s\n", err)
	}
	return code
}

// classify turns an error cobra raised itself (unknown command or flag, bad
// arguments) into a usage error; errors from the commands' code pass as they
// are.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var ce *commandError
	if errors.As(err, &ce) {
		return ce.err
	}
	var code *codeError
	if errors.As(err, &code) {
		return err
	}
	return &usageError{err: err}
}
