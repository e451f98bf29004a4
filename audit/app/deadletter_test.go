package app_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/config"
)

// TestReconcileRefusesADeadLetterTopic: a step does not read the
// dead-letter queue, so reconcile (and watch, which runs its steps) stops
// with a configuration error naming the key before touching the cluster.
func TestReconcileRefusesADeadLetterTopic(t *testing.T) {
	cfg := &config.Config{Pipeline: config.Pipeline{DeadLetterTopic: "app-dlq"}}
	_, err := app.Reconcile(context.Background(), cfg, app.Options{})
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Key != "pipeline.dead_letter_topic" {
		t.Fatalf("reconcile with a dead-letter topic: %v, want a configuration error on pipeline.dead_letter_topic", err)
	}
}
