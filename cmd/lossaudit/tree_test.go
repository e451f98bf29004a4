package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

// newTestRootCmd is newRootCmd for tests that run the tree in-process: the
// test process's environment holds the test bed's variables
// (LOSSAUDIT_REAL_KAFKA, ...), which the binary would refuse as misspelt
// settings.
func newTestRootCmd(stdout, stderr io.Writer) *cobra.Command {
	return newTree(&globalFlags{ignoreEnv: testbedenv.Is}, stdout, stderr)
}

// testRun is run on the tests' tree (newTestRootCmd).
func testRun(args []string, stdout, stderr io.Writer) int {
	return runTree(newTestRootCmd(stdout, stderr), args, stderr)
}
