package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/streams"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// windowRetentions sets, for each windowed input, the shortest time-based
// retention of its changelog (compact,delete: Kafka Streams gives a window
// store's changelog the store's retention plus a day,
// WindowedChangelogTopicConfig) and of the output topic: records older
// than it are counted, not checked (streams.Input.WindowRetention). A
// size-based retention (retention.bytes) may delete any window: refused. A
// config that cannot be read stops the audit: without it no window is
// known to be kept.
func windowRetentions(ctx context.Context, tc topicConfigs, m *topology.Model, inputs []streams.Input) error {
	for x := range inputs {
		in := &inputs[x]
		if in.Window == nil {
			continue
		}
		topics := []string{in.ChangelogTopic}
		if m.Output != "" {
			topics = append(topics, m.Output)
		}
		var shortest time.Duration
		for _, t := range topics {
			cfg, err := tc.TopicConfig(ctx, t, "cleanup.policy", "retention.ms", "retention.bytes")
			if err != nil {
				var te *kread.TopicConfigError
				if errors.As(err, &te) {
					return &config.Error{Key: "pipeline.nodes", Msg: fmt.Sprintf("input %s is a windowed aggregation: the retention of topic %s must be known to tell which windows it still holds, but its config could not be read: %v", in.Name, t, te)}
				}
				return fmt.Errorf("describing the configs of topic %s: %w", t, err)
			}
			if !strings.Contains(cfg["cleanup.policy"], "delete") {
				continue
			}
			if b := cfg["retention.bytes"]; b != "" && b != "-1" {
				return &config.Error{Key: "pipeline.nodes", Msg: fmt.Sprintf("input %s is a windowed aggregation, but topic %s has retention.bytes=%s: size-based retention may delete any window, so none is known to be kept (set retention.bytes=-1)", in.Name, t, b)}
			}
			ms, err := strconv.ParseInt(cfg["retention.ms"], 10, 64)
			if err != nil || ms < 0 {
				continue // unset or -1: kept
			}
			if d := time.Duration(ms) * time.Millisecond; shortest == 0 || d < shortest {
				shortest = d
			}
		}
		in.WindowRetention = shortest
	}
	return nil
}
