package main

// Stub by engineer A so the command tree compiles; its owner replaces this file.

import (
	"errors"

	"github.com/spf13/cobra"
)

// newTopologyCmd returns the topology command (stub).
func newTopologyCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "topology",
		Short: "topology (not implemented yet)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("topology: not implemented yet")
		},
	}
}
