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
// `lossaudit: <message>`, never with a stack trace. SIGINT and SIGTERM cancel
// the command's context.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return execute(ctx, newRootCmd(stdout, stderr), args, stderr)
}

// execute runs root with args and returns the exit code, printing the
// error, if any, to stderr.
func execute(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	err := classify(root.ExecuteContext(ctx))
	code := exitCode(err)
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
