package main

// Stub by engineer A so the command tree compiles; engineer B replaces this file.

import (
	"errors"

	"github.com/spf13/cobra"
)

// newScanCmd returns the scan command (stub).
func newScanCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	var topics []string
	cmd := &cobra.Command{
		Use:   "scan",
		Short: "Read topics with read_committed semantics and print per-partition offsets and counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.load(cmd); err != nil {
				return err
			}
			return errors.New("scan: not implemented yet")
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per partition")
	cmd.Flags().StringSliceVar(&topics, "topic", nil, "topic to scan (repeatable)")
	return cmd
}
