package compare

import (
	"fmt"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
)

// checked is what the check phase found.
type checked struct {
	rows []finding.Row
	// identities and unexplained count, per pair, the source identities
	// checked and the sink records with no source record; ledgerIDs the
	// identities the ledger sent.
	identities, unexplained []int64
	ledgerIDs               int64
	ledger                  finding.LedgerCounts
	// withheld counts the missing rows held back because a sink of their
	// pair has a hanging transaction.
	withheld int64
}

// pairJudge is a reconcile step's part in the check of each pair
// identity (stepVisitor): it adds what earlier steps kept of the identity
// to this step's entries, judges it, and stages its new state. For a step,
// identities and unexplained in res count the change since the last step.
type pairJudge interface {
	judge(x int, key []byte, c *index.Cursor, spec *detect.PairSpec, stuck bool, res *checked) error
}

// check streams the index identity by identity through the detectors.
// stuck says, per pair, whether its sink has a stuck partition: a copy
// may then be invisible, so the pair's missing rows are withheld. j, when
// not nil, judges the pair identities (a reconcile step).
func check(o Options, snap *compareSnapshot, led *ledgerState, stuck []bool, j pairJudge) (*checked, error) {
	res := &checked{identities: make([]int64, len(o.Pairs)), unexplained: make([]int64, len(o.Pairs))}
	pairs := make([]detect.PairSpec, len(o.Pairs))
	for x, p := range o.Pairs {
		pairs[x] = detect.PairSpec{Name: p.Name, Source: p.Source, Sink: p.Sink, ReportUnexpected: o.ReportUnexpected}
	}
	ledgers := make([]detect.LedgerSpec, len(led.topics))
	for lt, t := range led.topics {
		spec := detect.LedgerSpec{Input: t, Topic: t, Partitions: map[int32]detect.Bounds{}}
		for _, p := range o.Pairs {
			if p.Source == t {
				spec.Input = p.Name
				break
			}
		}
		st := snap.ledger[lt]
		for _, p := range st.Parts {
			of := st.Offsets[p]
			spec.Partitions[p] = detect.Bounds{LogStart: of.LogStart, LSO: of.LSO, HighWatermark: of.HighWatermark}
		}
		ledgers[lt] = spec
	}
	var stream *detect.StreamSpec
	if o.Stream != nil {
		stream = streamSpec(o)
	}
	var cev detect.CopyEvidence
	var lev detect.LedgerEvidence
	err := o.Store.EachKey(func(key []byte, c *index.Cursor) error {
		space, idx, err := parseKey(key)
		if err != nil {
			return err
		}
		if space == spacePair {
			if idx >= len(pairs) {
				return fmt.Errorf("index: entry for pair %d of %d (was the store written by another configuration?)", idx, len(pairs))
			}
			if j != nil {
				return j.judge(idx, key, c, &pairs[idx], stuck[idx], res)
			}
			if err := foldPair(c, &cev); err != nil {
				return err
			}
			n := len(res.rows)
			var cc detect.CopyCounts
			if stream != nil {
				res.rows, cc = detect.StreamCopies(stream, &cev, res.rows)
			} else {
				res.rows, cc = detect.Copies(&pairs[idx], &cev, res.rows)
			}
			res.identities[idx] += cc.Checked
			res.unexplained[idx] += cc.Unexplained
			if stuck[idx] {
				res.rows = withhold(res.rows, n, &res.withheld)
			}
			return nil
		}
		if idx >= len(ledgers) {
			return fmt.Errorf("index: entry for ledger topic %d of %d (was the store written by another configuration?)", idx, len(ledgers))
		}
		if err := foldLedger(c, &ledgers[idx], &lev); err != nil {
			return err
		}
		var lc finding.LedgerCounts
		res.rows, lc = detect.Ledger(&ledgers[idx], &lev, res.rows)
		if lev.Sends > 0 {
			res.ledgerIDs++
		}
		res.ledger.Verified += lc.Verified
		res.ledger.Expired += lc.Expired
		res.ledger.Unsettled += lc.Unsettled
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("compare: checking the index: %w", err)
	}
	return res, nil
}

// withhold drops the missing rows from rows[from:], counting them.
func withhold(rows []finding.Row, from int, n *int64) []finding.Row {
	out := rows[:from]
	for _, r := range rows[from:] {
		if r.Kind == finding.Missing {
			*n++
			continue
		}
		out = append(out, r)
	}
	return out
}
