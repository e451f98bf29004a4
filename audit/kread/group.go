package kread

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go/protocol/describegroups"
)

// GroupState returns the state of a consumer group as its coordinator
// describes it (Stable, PreparingRebalance, CompletingRebalance, Empty,
// Dead) and its number of members. It never joins the group.
func (c *Client) GroupState(ctx context.Context, group string) (state string, members int, err error) {
	err = c.retry(ctx, "describing group "+group, func(ctx context.Context) error {
		r, err := c.roundTrip(ctx, &describegroups.Request{Groups: []string{group}})
		if err != nil {
			return err
		}
		res, ok := r.(*describegroups.Response)
		if !ok {
			return fmt.Errorf("unexpected response %T", r)
		}
		for _, g := range res.Groups {
			if g.GroupID != group {
				continue
			}
			if err := codeErr(g.ErrorCode); err != nil {
				return err
			}
			state, members = g.GroupState, len(g.Members)
			return nil
		}
		return fmt.Errorf("group %q missing from the answer", group)
	})
	if err != nil {
		return "", 0, fmt.Errorf("describing group %q: %w", group, err)
	}
	return state, members, nil
}
