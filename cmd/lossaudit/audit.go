package main

// Stub by engineer A so the command tree compiles; its owner replaces this file.

import (
	"errors"

	"github.com/spf13/cobra"
)

// newAuditCmd returns the audit command (stub).
func newAuditCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "audit",
		Short: "audit (not implemented yet)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("audit: not implemented yet")
		},
	}
}
