package main

// Stub by engineer A so the command tree compiles; its owner replaces this file.

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDemoCmd returns the demo command (stub).
func newDemoCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "demo (not implemented yet)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("demo: not implemented yet")
		},
	}
}
