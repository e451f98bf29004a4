//go:build testbed

package main

import (
	"context"
	"os"
	"strings"
)

// failpointPrefix starts the variables that set failpoints.
const failpointPrefix = "LOSSAUDIT_TESTBED_"

// failpointVar reports whether the environment variable name sets a
// failpoint (or is another test bed variable under its prefix) rather than
// a configuration key. Only a binary built with -tags testbed has
// failpoints; a release binary refuses these variables as misspelt keys.
func failpointVar(name string) bool { return strings.HasPrefix(name, failpointPrefix) }

// failpointsFromEnv reads LOSSAUDIT_TESTBED_CRASH_AT and
// LOSSAUDIT_TESTBED_INTERRUPT_AT.
func failpointsFromEnv(ctx context.Context) *failpoints {
	return &failpoints{ctx: ctx, crash: os.Getenv(failpointPrefix + "CRASH_AT"), interrupt: os.Getenv(failpointPrefix + "INTERRUPT_AT")}
}
