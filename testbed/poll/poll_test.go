package poll

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	for _, tc := range []struct {
		name     string
		holdsAt  int64 // cond holds from this call on; 0: never
		d        time.Duration
		wantErr  bool
		minCalls int64
	}{
		{name: "holds at once", holdsAt: 1, d: time.Minute, minCalls: 1},
		{name: "holds at the fifth check", holdsAt: 5, d: time.Minute, minCalls: 5},
		{name: "never holds", holdsAt: 0, d: 50 * time.Millisecond, wantErr: true, minCalls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			err := Until(context.Background(), tc.d, time.Millisecond, "the thing", func() bool {
				n := calls.Add(1)
				return tc.holdsAt > 0 && n >= tc.holdsAt
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && (!errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "the thing")) {
				t.Errorf("err = %v, want it to name the thing and the deadline", err)
			}
			if got := calls.Load(); got < tc.minCalls || (tc.holdsAt > 0 && got != tc.holdsAt) {
				t.Errorf("cond called %d times, want %d", got, max(tc.minCalls, tc.holdsAt))
			}
		})
	}
}

func TestUntilStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Until(ctx, time.Hour, time.Hour, "nothing", func() bool { return false })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
