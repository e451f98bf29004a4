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

// OutputInnerJoin is the rule of the output stage of a chain of KTable
// inner joins: a result is expected only for a key that every table holds
// as a value (tables); then the output must reach expected, the newest
// processed update of any input. Proof: the last update processed by the
// chain, from either side, found the other side's final value and wrote a
// result at max(its timestamp, the other side's) (KTableKTableInnerJoin's
// resultTimestamp), so at least every side's newest update; a key some
// table lacks has no result (an earlier one was deleted by a tombstone).
func OutputInnerJoin(tables []StageState, out StageState, expected int64) (kind finding.Kind, checked, bad bool) {
	for _, t := range tables {
		if !t.Has || t.Tombstone {
			return "", false, false
		}
	}
	kind, bad = TableMax(out, expected)
	return kind, true, bad
}

// OutputOuterJoin is the rule of the output stage of a chain of KTable
// outer joins for one input's table, own: a result is expected when own
// holds the key as a value, at least as new as own's newest processed
// update (expected). Proof: KTableKTableOuterJoin forwards a result for
// every update of either side, at max(record ts, other side's ts), or the
// record's own timestamp when the other side is absent; the last update
// processed saw own's final value, so the result is at least own's newest.
// A side that holds a tombstone or nothing is not checked.
func OutputOuterJoin(own, out StageState, expected int64) (kind finding.Kind, checked, bad bool) {
	return OutputLeftJoin(own, out, expected)
}
