package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

type listerFunc func(context.Context) ([]string, error)

func (f listerFunc) Topics(ctx context.Context) ([]string, error) { return f(ctx) }

const (
	topoABC = "../../audit/streams/topology/testdata/order-abc-3.6.2.txt"
	s02     = "KSTREAM-REDUCE-STATE-STORE-0000000002"
	s09     = "KSTREAM-REDUCE-STATE-STORE-0000000009"
	s16     = "KSTREAM-REDUCE-STATE-STORE-0000000016"
)

func topoConfig() *config.Config {
	return &config.Config{Pipeline: config.Pipeline{
		ApplicationID: "app", TopologyFile: topoABC, Output: "joined", Join: "left", Reduce: "plain",
		Inputs: []config.Input{{Name: "a", Topic: "topicA"}, {Name: "b", Topic: "topicB"}, {Name: "c", Topic: "topicC"}},
	}}
}

// allTopics are the topics of a cluster running order-abc as "app".
func allTopics() []string {
	ts := []string{"topicA", "topicB", "topicC", "joined"}
	for _, s := range []string{s02, s09, s16} {
		ts = append(ts, "app-"+s+"-repartition", "app-"+s+"-changelog")
	}
	return ts
}

func without(ts []string, drop ...string) []string {
	var out []string
	for _, t := range ts {
		keep := true
		for _, d := range drop {
			keep = keep && t != d
		}
		if keep {
			out = append(out, t)
		}
	}
	return out
}

// rowRe matches one stage-map row: INPUT ROLE FROM STATUS NAME.
func row(input, role, name, from, status string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(input) + `\s+` + role + `\s+` + regexp.QuoteMeta(from) + `\s+` + status + `\s+` + regexp.QuoteMeta(name) + `$`)
}

func TestRunTopology(t *testing.T) {
	overridden := topoConfig()
	overridden.Pipeline.Inputs[0].ChangelogTopic = "custom-a-changelog"
	cases := []struct {
		name   string
		cfg    *config.Config
		topics []string
		code   int
		key    string // config key of an exit-2 error
		rows   []*regexp.Regexp
		errMsg string
		// group is the application's streams group (nil: none).
		group *kread.StreamsTopology
	}{
		{
			name: "all present", cfg: topoConfig(), topics: allTopics(), code: exitOK,
			rows: []*regexp.Regexp{
				row("a", "input", "topicA", "config", "ok"),
				row("a", "repartition", "app-"+s02+"-repartition", "topology file", "ok"),
				row("a", "store", s02, "topology file", "-"),
				row("b", "changelog", "app-"+s09+"-changelog", "topology file", "ok"),
				row("c", "changelog", "app-"+s16+"-changelog", "topology file", "ok"),
				row("-", "output", "joined", "config", "ok"),
				regexp.MustCompile(`(?m)^  table:b\s+table\s+app-` + s09 + `-changelog \(topology file\) store ` + s09 + ` \(topology file\) by reduce\n    rule table-max: `),
				regexp.MustCompile(`(?m)^  output\s+output\s+joined \(config\)\n    rule output-left-join: `),
				regexp.MustCompile(`(?m)^  link:c -> table:c via reduce: key identity, coalesced per key, timestamp max$`),
			},
		},
		{
			name: "derived changelog missing", cfg: topoConfig(), topics: without(allTopics(), "app-"+s09+"-changelog"), code: exitFindings,
			rows:   []*regexp.Regexp{row("b", "changelog", "app-"+s09+"-changelog", "topology file", "MISSING"), row("a", "changelog", "app-"+s02+"-changelog", "topology file", "ok")},
			errMsg: "derived internal topics do not exist: app-" + s09 + "-changelog",
		},
		{
			name: "input topic missing", cfg: topoConfig(), topics: without(allTopics(), "topicC", "joined"), code: exitUsage, key: "pipeline.inputs[2].topic",
			rows:   []*regexp.Regexp{row("c", "input", "topicC", "config", "MISSING")},
			errMsg: `topic "topicC" does not exist; pipeline.output: topic "joined" does not exist either`,
		},
		{
			name: "overridden changelog missing", cfg: overridden, topics: allTopics(), code: exitUsage, key: "pipeline.inputs[0].changelog_topic",
			rows: []*regexp.Regexp{row("a", "changelog", "custom-a-changelog", "override", "MISSING")},
		},
	}
	cases = append(cases, streamsGroupCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			topics := tc.topics
			var lister topology.TopicLister = listerFunc(func(context.Context) ([]string, error) { return topics, nil })
			if tc.group != nil {
				lister = groupLister{topics: topics, group: tc.group}
			}
			_, err := runTopology(context.Background(), tc.cfg, lister, nil, &out)
			if got := exitCode(err); got != tc.code {
				t.Fatalf("exit code %d (%v), want %d\n%s", got, err, tc.code, out.String())
			}
			if tc.key != "" {
				var ce *config.Error
				if !errors.As(err, &ce) || ce.Key != tc.key {
					t.Fatalf("error %v, want a config error for %s", err, tc.key)
				}
			}
			if tc.errMsg != "" && !strings.Contains(err.Error(), tc.errMsg) {
				t.Errorf("error %q, want it to contain %q", err, tc.errMsg)
			}
			for _, re := range tc.rows {
				if !re.MatchString(out.String()) {
					t.Errorf("no row matching %s in\n%s", re, out.String())
				}
			}
		})
	}

	t.Run("listing fails", func(t *testing.T) {
		boom := errors.New("connection refused")
		_, err := runTopology(context.Background(), topoConfig(), listerFunc(func(context.Context) ([]string, error) { return nil, boom }), nil, &bytes.Buffer{})
		if exitCode(err) != exitIncomplete || !errors.Is(err, boom) {
			t.Fatalf("error %v: want exit 3 wrapping the cause", err)
		}
	})
	t.Run("bad topology file", func(t *testing.T) {
		cfg := topoConfig()
		cfg.Pipeline.Output = "elsewhere"
		_, err := runTopology(context.Background(), cfg, listerFunc(func(context.Context) ([]string, error) { return allTopics(), nil }), nil, &bytes.Buffer{})
		var ce *config.Error
		if exitCode(err) != exitUsage || !errors.As(err, &ce) || ce.Key != "pipeline.output" {
			t.Fatalf("error %v: want exit 2 for pipeline.output", err)
		}
	})
}

// TestTopologyCommand runs the whole command against an in-process cluster.
func TestTopologyCommand(t *testing.T) {
	topics := without(allTopics(), "app-"+s16+"-repartition")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	abs, err := filepath.Abs(topoABC)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "audit.yaml")
	yaml := `kafka:
  brokers: ["` + c.ListenAddrs()[0] + `"]
pipeline:
  application_id: app
  topology_file: "` + abs + `"
  output: joined
  join: left
  reduce: plain
  inputs:
    - {name: a, topic: topicA}
    - {name: b, topic: topicB}
    - {name: c, topic: topicC}
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := testRun([]string{"topology", "-c", file}, &stdout, &stderr)
	if code != exitFindings {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !row("c", "repartition", "app-"+s16+"-repartition", "topology file", "MISSING").MatchString(stdout.String()) ||
		!row("c", "changelog", "app-"+s16+"-changelog", "topology file", "ok").MatchString(stdout.String()) {
		t.Errorf("stage map:\n%s", stdout.String())
	}
	if want := "lossaudit: derived internal topics do not exist: app-" + s16 + "-repartition"; !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("stderr %q, want prefix %q", stderr.String(), want)
	}
}

// TestUnsupportedTopologyExits2: a topology holding a node the audit does
// not support stops topology, audit, reconcile and watch with exit 2 and one line
// naming the node, its kind, its line in the topology file and what is
// supported; a mistaken pipeline.nodes entry is exit 2 naming the line of
// the configuration that holds it. pipeline.output is left to the
// topology file.
func TestUnsupportedTopologyExits2(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "topicA", "joined"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	config := func(topology, nodes string) string {
		abs, err := filepath.Abs("../../audit/streams/topology/testdata/" + topology)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "audit.yaml")
		yaml := `kafka:
  brokers: ["` + c.ListenAddrs()[0] + `"]
pipeline:
  application_id: app
  topology_file: "` + abs + `"
  inputs:
    - {name: a, topic: topicA}
` + nodes + `store:
  dir: "` + filepath.Join(dir, "store") + `"
report:
  csv: ""
`
		if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	cases := []struct {
		name, topology, nodes string
		want                  []string
	}{
		{"generated foreign-key join", "unsupported-fk-join-4.4.0.txt", "  reduce: plain\n",
			[]string{"unsupported-fk-join-4.4.0.txt:28: node KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000015 on the path of input topic topicA is of kind fk-join (from its generated name), which lossaudit does not audit yet", "supported: selectKey -> groupByKey -> reduce per input"}},
		{"named suppress, undeclared", "unsupported-suppress-named-4.4.0.txt", "  reduce: plain\n  nodes: [{name: latest, kind: reduce}]\n",
			[]string{"unsupported-suppress-named-4.4.0.txt:20: node hold on the path of input topic topicA is of unknown kind", "declare it in pipeline.nodes"}},
		{"named suppress declared, its reduce windowed", "unsupported-suppress-named-4.4.0.txt", "  reduce: plain\n  nodes:\n    - {name: latest, kind: windowed}\n    - {name: hold, kind: suppress}\n",
			[]string{"unsupported-suppress-named-4.4.0.txt:17: node latest on the path of input topic topicA is of kind windowed (from its pipeline.nodes)"}},
		{"join type undeclared", "order-abc-4.4.0.txt", "  reduce: plain\n",
			[]string{"pipeline.join: is not set, but ", "order-abc-4.4.0.txt:36: node KTABLE-MERGE-0000000021 is a KTable-KTable join, and describe() does not show whether it is inner, left or outer; declare it: left, inner or outer"}},
		{"reduce type undeclared", "unsupported-windowed-reduce-4.4.0.txt", "",
			[]string{"pipeline.reduce: is not set, but ", "unsupported-windowed-reduce-4.4.0.txt:17: node KSTREAM-REDUCE-0000000003 (store KSTREAM-REDUCE-STATE-STORE-0000000002) on the path of input topic topicA is a reduce, and describe() does not show whether it is windowed; declare it: plain (audited) or windowed (not audited yet)"}},
		{"windowed reduce declared", "unsupported-windowed-reduce-4.4.0.txt", "  reduce: windowed\n",
			[]string{"unsupported-windowed-reduce-4.4.0.txt:17: node KSTREAM-REDUCE-0000000003 on the path of input topic topicA is of kind windowed (from its pipeline.reduce), which lossaudit does not audit yet"}},
		{"kind typo", "unsupported-suppress-named-4.4.0.txt", "  reduce: plain\n  nodes:\n    - {name: latest, kind: reduce}\n    - {name: hold, kind: supress}\n",
			[]string{"audit.yaml:11: pipeline.nodes[1].kind: \"supress\" is not a node kind (did you mean suppress?)"}},
	}
	for _, tc := range cases {
		for _, cmd := range [][]string{{"topology"}, {"audit"}, {"reconcile"}, {"watch", "--listen", "127.0.0.1:0", "--interval", "1h"}} {
			t.Run(tc.name+"/"+cmd[0], func(t *testing.T) {
				file := config(tc.topology, tc.nodes)
				var stdout, stderr bytes.Buffer
				code := testRun(append(cmd, "-c", file), &stdout, &stderr)
				lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
				last := lines[len(lines)-1]
				if code != exitUsage || !strings.HasPrefix(last, "lossaudit: ") {
					t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
				}
				for _, w := range tc.want {
					if !strings.Contains(last, w) {
						t.Errorf("stderr %q lacks %q", last, w)
					}
				}
			})
		}
	}
}
