package detect

import "github.com/lossaudit/lossaudit/audit/finding"

// TableMax is the rule of a table stage whose operator carries timestamps
// as maxima (a reduce, an aggregate or count, a KTable-KTable join): it
// decides whether the stage, holding st for a key, has reached expected,
// the timestamp of the key's newest processed update, and if not, which
// kind of finding that is.
//
// Proof: KStreamReduce and KStreamAggregate write max(record ts, old
// aggregate ts), and the changelog records carry the store value's
// timestamp, so a stage that processed the update holds the key at a
// timestamp at least expected. Absent is missing; older is stale; at
// least expected only inside aborted transactions is aborted (the write
// happened and was rolled back).
func TableMax(st StageState, expected int64) (finding.Kind, bool) {
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
