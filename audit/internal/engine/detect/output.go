package detect

import "github.com/lossaudit/lossaudit/audit/finding"

// OutputLeftJoin is the rule of the output stage of a chain of KTable left
// joins (or of one table's toStream, a chain of no joins): for a key whose
// left-most table holds left, an output is expected exactly when left is
// a value (not a tombstone, not absent); checked says so. Then the output,
// holding out, must reach expected like a table (TableMax): a left join's
// result carries max(left ts, right ts) (KTableKTableLeftJoin's
// resultTimestamp), so it is at least every side's newest processed
// update.
func OutputLeftJoin(left, out StageState, expected int64) (kind finding.Kind, checked, bad bool) {
	if !left.Has || left.Tombstone {
		return "", false, false
	}
	kind, bad = TableMax(out, expected)
	return kind, true, bad
}
