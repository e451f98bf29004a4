//go:build !testbed

package main

import "context"

// failpointVar: a release binary has no failpoints, so no variable is
// one (see failpoints_testbed.go).
func failpointVar(string) bool { return false }

// failpointsFromEnv returns failpoints that never stop the process: the
// environment cannot make a release binary kill itself.
func failpointsFromEnv(ctx context.Context) *failpoints { return &failpoints{ctx: ctx} }
