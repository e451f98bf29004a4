package app

import (
	"context"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
)

// streamsTopologer describes a streams group's topology; *kread.Client
// satisfies it.
type streamsTopologer interface {
	StreamsGroupTopology(ctx context.Context, group string) (*kread.StreamsTopology, kread.Group, error)
}

// GroupSource is the pipeline model's source of names from the
// application's streams group (KIP-1071): the topology the group's
// coordinator holds, asked with StreamsGroupDescribe. A group that is not
// a streams group gives none.
func GroupSource(c streamsTopologer) topology.GroupSource {
	return func(ctx context.Context, app string) (*topology.GroupTopology, error) {
		st, _, err := c.StreamsGroupTopology(ctx, app)
		if err != nil || st == nil {
			return nil, err
		}
		g := &topology.GroupTopology{Group: st.Group, Epoch: st.Epoch}
		for _, s := range st.Subtopologies {
			g.Subtopologies = append(g.Subtopologies, topology.GroupSubtopology{
				ID: s.ID, SourceTopics: s.SourceTopics, RepartitionSourceTopics: s.RepartitionSourceTopics,
				RepartitionSinkTopics: s.RepartitionSinkTopics, ChangelogTopics: s.ChangelogTopics,
			})
		}
		return g, nil
	}
}
