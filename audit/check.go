package audit

import (
	"fmt"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/index"
	"github.com/lossaudit/lossaudit/audit/internal/detect"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// checked is what the check phase found.
type checked struct {
	rows []finding.Row
	// checkedChangelog and checkedOutput count the (input, key) pairs
	// checked at each stage; withheld the rows held back.
	checkedChangelog, checkedOutput, withheld int64
	// pending counts, per input, the candidates pending at the second hop.
	pending []int64
}

// check streams the index key by key through the core check. Candidates
// pending at the second hop move from audited to pending on tl.
func check(o Options, snap *pipelineSnapshot, stuck map[kread.TP]bool, tl *timeline) (*checked, error) {
	spec := &detect.KeySpec{}
	for _, in := range o.Inputs {
		spec.Inputs = append(spec.Inputs, detect.InputSpec{Name: in.Name, Topic: in.Topic, RepartitionTopic: in.RepartitionTopic})
	}
	if len(stuck) > 0 {
		spec.Withheld = func(stage finding.Stage, x int, key []byte) bool {
			t := snap.output
			if stage == finding.StageChangelog {
				t = snap.changelogs[x]
			}
			return stuck[kread.TP{Topic: t.Name, Partition: partitionFor(key, len(t.Parts))}]
		}
	}
	res := &checked{pending: make([]int64, len(o.Inputs))}
	ev := detect.NewKeyEvidence(len(o.Inputs))
	err := o.Store.Scan(func(key []byte, c *index.Cursor) error {
		if err := fold(key, c, ev, len(o.Inputs), tl.movePending); err != nil {
			return err
		}
		var kc detect.KeyCounts
		res.rows, kc = detect.Keys(spec, ev, res.rows)
		res.checkedChangelog += int64(kc.CheckedChangelog)
		res.checkedOutput += int64(kc.CheckedOutput)
		res.withheld += int64(kc.Withheld)
		for x := range ev.Inputs {
			res.pending[x] += ev.Inputs[x].Pending
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit: checking the index: %w", err)
	}
	return res, nil
}
