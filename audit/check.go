package audit

import (
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/index"
)

// stageInput names one input for the rows the check produces.
type stageInput struct {
	Name  string
	Topic string
}

// checker applies the core check of DESIGN.md to one key at a time. It
// holds no per-key state, so its memory does not grow with the key count.
type checker struct {
	inputs []stageInput
	// withheld reports whether rows at a stage for a key must be withheld
	// because a partition they depend on never settled (stuck_lso). Nil
	// means nothing is withheld.
	withheld func(stage finding.Stage, input int, key []byte) bool
}

// keyResult is what the check concluded for one key.
type keyResult struct {
	// checkedChangelog and checkedOutput count the (input, key) pairs
	// checked at each stage; withheld counts rows held back because a
	// partition they depend on never settled.
	checkedChangelog, checkedOutput int
	withheld                        int
}

// check evaluates one key. Rows are appended to dst, which is returned.
func (c *checker) check(v *index.KeyView, dst []finding.Row) ([]finding.Row, keyResult) {
	var res keyResult
	left := v.Changelog[0]
	inLeftTable := left.Has && !left.Tombstone
	for x, in := range v.Inputs {
		if !in.Has {
			continue
		}
		e := in.Evidence
		row := finding.Row{
			Input:      c.inputs[x].Name,
			Key:        v.Key,
			Topic:      c.inputs[x].Topic,
			Partition:  e.Partition,
			Offset:     e.Offset,
			Timestamp:  e.TS,
			ExpectedTS: e.TS,
		}
		res.checkedChangelog++
		if kind, bad := judge(v.Changelog[x], e.TS); bad {
			if c.withheld != nil && c.withheld(finding.StageChangelog, x, v.Key) {
				res.withheld++
				continue
			}
			row.Kind, row.Stage = kind, finding.StageChangelog
			row.ObservedTS, row.HasObserved = v.Changelog[x].TS, v.Changelog[x].Has
			dst = append(dst, row)
			continue
		}
		if !inLeftTable {
			continue // no join result is expected for a key the left table lacks
		}
		res.checkedOutput++
		if kind, bad := judge(v.Output, e.TS); bad {
			if c.withheld != nil && c.withheld(finding.StageOutput, x, v.Key) {
				res.withheld++
				continue
			}
			row.Kind, row.Stage = kind, finding.StageOutput
			row.ObservedTS, row.HasObserved = v.Output.TS, v.Output.Has
			dst = append(dst, row)
		}
	}
	return dst, res
}

// judge decides whether a stage holding st has reached timestamp expected,
// and if not, which kind of finding that is.
func judge(st index.StageView, expected int64) (finding.Kind, bool) {
	if st.Has && st.TS >= expected {
		return "", false
	}
	if st.HasAborted && st.AbortedTS >= expected {
		return finding.Aborted, true
	}
	if !st.Has {
		return finding.Missing, true
	}
	return finding.Stale, true
}
