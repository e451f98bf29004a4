package detect

import (
	"github.com/lossaudit/lossaudit/audit/finding"
)

// InputOutcome is what reading one input showed, for the verdict.
type InputOutcome struct {
	Name   string
	Counts finding.InputCounts
	// Committed is true when the group has a committed offset on at least
	// one partition of the input topic.
	Committed bool
	// Field is the configured field path that selects the key ("" when the
	// record key is kept), TopError the most frequent decode error class,
	// and Nearest the writer schema's field paths closest to Field when the
	// errors are missing fields.
	Field    string
	TopError string
	Nearest  []string
}

// RunOutcome is what the whole run showed, for the verdict.
type RunOutcome struct {
	Group  string
	Window finding.Window
	Inputs []InputOutcome
}

// Inconclusive returns why the run cannot vouch for some inputs, or for
// itself; nil when every input with records was checked.
//
// A clean verdict claims that the records that count reached every stage;
// it is only worth something if records were checked. For an input holding
// records in the audited range, the run is inconclusive when the group has
// committed no offset on it (nothing counts as processed: a wrong
// application_id, or offsets that expired), when most of its processed
// records could not be decoded or their key selected (more decode errors
// than records audited, dropped and decoded together: a wrong rekey path,
// a registry that does not know the schemas), or when none of its records
// could be audited at all (all pending, dropped or outside the window).
// The run as a whole is inconclusive when no input holds a record in the
// audited range (an empty window, or empty inputs).
func Inconclusive(o RunOutcome) []finding.Inconclusive {
	var out []finding.Inconclusive
	inRange := int64(0)
	for _, in := range o.Inputs {
		inRange += in.Counts.Scanned - in.Counts.OutsideWindow
	}
	if inRange == 0 {
		reason := finding.NoRecords
		if !o.Window.From.IsZero() || !o.Window.To.IsZero() {
			reason = finding.EmptyWindow
		}
		return []finding.Inconclusive{{Reason: reason, Group: o.Group, Window: o.Window}}
	}
	for _, in := range o.Inputs {
		c := in.Counts
		if c.Scanned-c.OutsideWindow == 0 {
			continue // nothing of this input to check in the audited range
		}
		base := finding.Inconclusive{Input: in.Name, Group: o.Group, Counts: c, Window: o.Window}
		processed := c.Audited + c.DecodeErrors + c.NullKey + c.NullValue
		switch {
		case !in.Committed:
			base.Reason = finding.NoCommittedOffsets
		case c.DecodeErrors > 0 && 2*c.DecodeErrors > processed:
			base.Reason = finding.MostlyUndecodable
			base.Field, base.TopError, base.Nearest = in.Field, in.TopError, in.Nearest
		case c.Audited == 0:
			base.Reason = finding.NothingAudited
		default:
			continue
		}
		out = append(out, base)
	}
	return out
}
