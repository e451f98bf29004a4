package report

import (
	"strings"
	"unicode/utf8"
)

// table renders aligned columns: the first column left-aligned, the columns
// marked in right right-aligned (numbers), two spaces between columns, no
// trailing spaces. It is used instead of text/tabwriter because tabwriter
// aligns every column the same way, and numbers read best right-aligned.
type table struct {
	header []string
	right  []bool
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(b *strings.Builder, indent string) {
	widths := make([]int, len(t.header))
	all := append([][]string{t.header}, t.rows...)
	for _, r := range all {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
	}
	for _, r := range all {
		var line strings.Builder
		line.WriteString(indent)
		for i, c := range r {
			if i >= len(widths) {
				break
			}
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < len(t.right) && t.right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
}
