package main

import (
	"fmt"
	"io"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/config"
)

// newReader builds the committed reader for cfg (see app.NewClient).
func newReader(cfg *config.Config, tweak func(*kread.Options)) (*kread.Client, error) {
	return app.NewClient(cfg, tweak)
}

// withWait makes a reader tell w, one line each, what it waits for while
// it retries, then applies tweak (which may be nil).
func withWait(w io.Writer, tweak func(*kread.Options)) func(*kread.Options) {
	return func(o *kread.Options) {
		o.Wait = func(msg string) { fmt.Fprintf(w, "lossaudit: %s\n", msg) }
		if tweak != nil {
			tweak(o)
		}
	}
}
