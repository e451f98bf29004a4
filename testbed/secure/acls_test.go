package secure

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lossaudit/lossaudit/testbed/kafka"
)

func TestParseACLCommands(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string // Grant.String(), in order
		err        string
	}{
		{"two topics, renamed", "kafka-acls.sh --bootstrap-server b:9093 --command-config a.properties --add \\\n" +
			"  --allow-principal User:x --operation Read --operation Describe --topic orders --topic out\n",
			[]string{"User:x READ+DESCRIBE on TOPIC:LITERAL:o2", "User:x READ+DESCRIBE on TOPIC:LITERAL:out"}, ""},
		{"prefixed, comments and blank lines skipped", "# a comment\n\nkafka-acls.sh --add --allow-principal User:x \\\n" +
			"  --operation DescribeConfigs --resource-pattern-type prefixed --topic app-\n",
			[]string{"User:x DESCRIBE_CONFIGS on TOPIC:PREFIXED:app-"}, ""},
		{"a group", "kafka-acls.sh --add --allow-principal User:x --operation Describe --group app\n",
			[]string{"User:x DESCRIBE on GROUP:LITERAL:app"}, ""},
		{"an option the test does not know", "kafka-acls.sh --add --allow-principal User:x --operation Read --topic t --allow-host 10.0.0.1\n",
			nil, "option --allow-host is not understood"},
		{"no --add", "kafka-acls.sh --allow-principal User:x --operation Read --topic t\n", nil, "want --add"},
		{"another command", "kafka-topics.sh --list\n", nil, "not kafka-acls.sh"},
		{"an option without its value", "kafka-acls.sh --add --allow-principal\n", nil, "without a value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs, err := ParseACLCommands(tc.text, map[string]string{"orders": "o2"})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range gs {
				got = append(got, g.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestDocACLCommands: docs/security.md's commands parse, grant only
// lossaudit's principal, and never more than reading and describing.
func TestDocACLCommands(t *testing.T) {
	tb, err := kafka.TestbedDir()
	if err != nil {
		t.Fatal(err)
	}
	text, err := DocACLCommands(filepath.Join(filepath.Dir(tb), "docs", "security.md"), "The exact commands")
	if err != nil {
		t.Fatal(err)
	}
	gs, err := ParseACLCommands(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) < 8 {
		t.Fatalf("%d grants, want the inputs, the output, the internal topics, the group, DescribeConfigs, the schemas and compare's sink: %v", len(gs), gs)
	}
	for _, g := range gs {
		if g.Principal != "User:lossaudit" {
			t.Errorf("%s: not lossaudit's principal", g)
		}
		for _, op := range g.Ops {
			switch op {
			case kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs:
			default:
				t.Errorf("%s: grants %s", g, op)
			}
		}
	}
}
