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

func (t *table) write(b *strings.Builder, indent string) { t.writeWithNotes(b, indent, nil, "") }

// writeWithNotes writes the table with, under row i, notes[i] wrapped to
// the line width with noteIndent.
func (t *table) writeWithNotes(b *strings.Builder, indent string, notes []string, noteIndent string) {
	widths := make([]int, len(t.header))
	all := append([][]string{t.header}, t.rows...)
	for _, r := range all {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
	}
	for i, r := range all {
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
		if i > 0 && i-1 < len(notes) && notes[i-1] != "" {
			b.WriteString(wrap(noteIndent, notes[i-1], noteIndent))
		}
	}
}

// wrap returns prefix + text wrapped at word boundaries to lineWidth
// columns, continuation lines starting with indent, ending in a newline.
// A word longer than a line is kept whole.
func wrap(prefix, text, indent string) string {
	var b strings.Builder
	line := prefix
	width := utf8.RuneCountInString(prefix)
	start := true
	for _, w := range strings.Fields(text) {
		n := utf8.RuneCountInString(w)
		if !start && width+1+n > lineWidth {
			b.WriteString(line + "\n")
			line, width, start = indent, utf8.RuneCountInString(indent), true
		}
		if !start {
			line += " "
			width++
		}
		line += w
		width += n
		start = false
	}
	b.WriteString(line + "\n")
	return b.String()
}
