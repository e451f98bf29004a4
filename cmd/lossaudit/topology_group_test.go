package main

import (
	"context"
	"regexp"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/config"
)

// groupLister lists topics and describes the application's streams group,
// as kread.Client does.
type groupLister struct {
	topics []string
	group  *kread.StreamsTopology
}

func (l groupLister) Topics(context.Context) ([]string, error) { return l.topics, nil }

func (l groupLister) StreamsGroupTopology(_ context.Context, group string) (*kread.StreamsTopology, kread.Group, error) {
	if l.group == nil || group != l.group.Group {
		return nil, kread.Group{ID: group}, nil
	}
	return l.group, kread.Group{ID: group, Type: kread.GroupStreams, State: "Empty"}, nil
}

// abcStreamsGroup is the streams group of order-abc run as "app", with the
// stores of the given numbers (in the order of inputs a, b, c).
func abcStreamsGroup(a, b, c string) *kread.StreamsTopology {
	rp := func(s string) string { return "app-" + s + "-repartition" }
	cl := func(s string) string { return "app-" + s + "-changelog" }
	return &kread.StreamsTopology{Group: "app", Epoch: 2, Subtopologies: []kread.StreamsSubtopology{
		{ID: "0", SourceTopics: []string{"topicA"}, RepartitionSinkTopics: []string{rp(a)}},
		{ID: "1", RepartitionSourceTopics: []string{rp(a), rp(b), rp(c)}, ChangelogTopics: []string{cl(a), cl(b), cl(c)}},
		{ID: "2", SourceTopics: []string{"topicB"}, RepartitionSinkTopics: []string{rp(b)}},
		{ID: "3", SourceTopics: []string{"topicC"}, RepartitionSinkTopics: []string{rp(c)}},
	}}
}

// topologyCase is a case of TestRunTopology's table (an alias of its
// struct type).
type topologyCase = struct {
	name   string
	cfg    *config.Config
	topics []string
	code   int
	key    string
	rows   []*regexp.Regexp
	errMsg string
	group  *kread.StreamsTopology
}

// streamsGroupCases are TestRunTopology's cases with a streams group:
// without a topology file, the names come from the application's streams
// group and `topology` says so; with one, the file is checked against the
// group, and a disagreement is exit 2 naming the topic and both sources.
func streamsGroupCases() []topologyCase {
	noFile := topoConfig()
	noFile.Pipeline.TopologyFile = ""
	return []topologyCase{
		{name: "names from the streams group", cfg: noFile, topics: allTopics(), group: abcStreamsGroup(s02, s09, s16), code: exitOK,
			rows: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^streams group app \(topology epoch 2\): names that no override or topology file gives are taken from it$`),
				row("a", "repartition", "app-"+s02+"-repartition", "streams group", "ok"),
				row("a", "store", s02, "derived from changelog", "-"),
				row("a", "changelog", "app-"+s02+"-changelog", "streams group", "ok"),
				row("c", "changelog", "app-"+s16+"-changelog", "streams group", "ok"),
			}},
		{name: "topology file agrees with the streams group", cfg: topoConfig(), topics: allTopics(), group: abcStreamsGroup(s02, s09, s16), code: exitOK,
			rows: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^streams group app \(topology epoch 2\): the topology file's names agree with it$`),
				row("a", "repartition", "app-"+s02+"-repartition", "topology file", "ok"),
			}},
		{name: "topology file disagrees with the streams group", cfg: topoConfig(), topics: allTopics(), group: abcStreamsGroup(s09, s16, s02), code: exitUsage, key: "pipeline.topology_file",
			errMsg: `input a (topic topicA): ` + topoABC + ` gives the repartition topic "app-` + s02 + `-repartition", but streams group app (topology epoch 2) gives "app-` + s09 + `-repartition"`},
	}
}
