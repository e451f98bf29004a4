package main

import (
	"testing"
	"time"
)

// TestProcessStart: the process started before the main package was
// initialised, and not long before (a test binary starts in well under a
// minute).
func TestProcessStart(t *testing.T) {
	got := processStart()
	if got.After(mainStarted) || mainStarted.Sub(got) > time.Minute {
		t.Errorf("process start %v, main package initialised %v", got, mainStarted)
	}
}
