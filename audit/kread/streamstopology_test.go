package kread

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestStreamsTopologyFromAnswer(t *testing.T) {
	ti := func(names ...string) []kmsg.TopicInfo {
		var out []kmsg.TopicInfo
		for _, n := range names {
			x := kmsg.NewTopicInfo()
			x.Topic = n
			out = append(out, x)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   *kmsg.StreamsGroupDescribeResponseGroupTopology
		want string
	}{
		{name: "none", in: nil, want: "<nil>"},
		{name: "two subtopologies, lists sorted", in: &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: 3, Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"in-b", "in-a"}, RepartitionSinkTopics: []string{"app-y-repartition", "app-x-repartition"}},
			{SubtopologyID: "1", RepartitionSourceTopics: ti("app-y-repartition", "app-x-repartition"), StateChangelogTopics: ti("app-y-changelog", "app-x-changelog")},
		}}, want: "&{Group: Epoch:3 Subtopologies:[{ID:0 SourceTopics:[in-a in-b] RepartitionSourceTopics:[] RepartitionSinkTopics:[app-x-repartition app-y-repartition] ChangelogTopics:[]} " +
			"{ID:1 SourceTopics:[] RepartitionSourceTopics:[app-x-repartition app-y-repartition] RepartitionSinkTopics:[] ChangelogTopics:[app-x-changelog app-y-changelog]}]}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprintf("%+v", streamsTopology(tc.in)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
