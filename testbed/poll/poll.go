// Package poll waits, in tests, for a state instead of for a time: a
// condition checked at an interval until it holds, bounded by a generous
// deadline, so that a slow or busy machine makes a test slower, never
// wrong.
package poll

import (
	"context"
	"fmt"
	"time"
)

// Until checks cond at once and then every interval until it holds, and
// returns nil. When d passes or ctx ends first, it checks cond a last
// time and returns an error saying what was awaited.
func Until(ctx context.Context, d, interval time.Duration, what string, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			if cond() {
				return nil
			}
			return fmt.Errorf("%s: not within %s: %w", what, d, ctx.Err())
		case <-tick.C:
		}
	}
}
