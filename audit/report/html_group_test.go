package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// TestHTMLGroupLine: the HTML report's Counts card carries the summary's
// Group line (type, state, members and the request that described the
// group), escaped; a result without a group has none.
func TestHTMLGroupLine(t *testing.T) {
	tests := []struct {
		name  string
		group *finding.Group
		want  string
	}{
		{"a streams group", &finding.Group{ID: "lossaudit-tb", Type: "streams", State: "Stable", Members: 2, Via: "StreamsGroupDescribe v0"},
			`<p class="note" id="group">Group: lossaudit-tb: streams group, Stable, 2 members (StreamsGroupDescribe v0)</p>`},
		{"a group that could not be described", &finding.Group{ID: "<b>app</b>", Members: -1, Error: "timed out"},
			`<p class="note" id="group">Group: &lt;b&gt;app&lt;/b&gt;: could not be described (timed out); no partition is judged stopped on it</p>`},
		{"no group", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cleanResult()
			res.Summary.Group = tt.group
			var b bytes.Buffer
			if err := WriteHTML(&b, res, HTMLOptions{}); err != nil {
				t.Fatal(err)
			}
			h := b.String()
			if tt.want == "" {
				if strings.Contains(h, `id="group"`) {
					t.Error("a Group line without a group")
				}
				return
			}
			if !strings.Contains(h, tt.want) {
				i := strings.Index(h, `id="group"`)
				t.Errorf("HTML lacks %s; its group line: %.200s", tt.want, h[max(i, 0):])
			}
		})
	}
}
