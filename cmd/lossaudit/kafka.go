package main

import (
	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/runner"
	"github.com/lossaudit/lossaudit/config"
)

// newReader builds the committed reader for cfg (see runner.NewClient).
func newReader(cfg *config.Config, tweak func(*kread.Options)) (*kread.Client, error) {
	return runner.NewClient(cfg, tweak)
}
