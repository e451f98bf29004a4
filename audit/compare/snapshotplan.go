package compare

import (
	"context"
	"errors"
	"fmt"
	"github.com/lossaudit/lossaudit/audit/finding"
	"time"

	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// compareSnapshot is what the snapshot phase saw, in the order that makes
// the comparison sound (see the package notes).
type compareSnapshot struct {
	// at is when the due offsets were taken.
	at time.Time
	// due holds, per source partition, the offset below which records
	// are due (before capping at the LSO); a partition missing from it
	// has nothing due (no committed offset of the group).
	due map[kread.TP]int64
	// committed says, per pair, whether the group had any committed
	// offset on its source (always true without a group).
	committed []bool
	// sinkStartHW holds the sinks' high watermarks when the due offsets
	// had been taken, by topic.
	sinkStartHW map[string]map[int32]int64
	// holders names, by sink topic and partition, the open transaction
	// holding the LSO of a sink partition that did not settle; holderErr
	// says why one could not be named.
	holders   map[string]map[int32]*finding.TxnHolder
	holderErr map[string]map[int32]string
	sinks     []snapshot.Topic
	sources   []snapshot.Topic
	// ledger holds the ledger topics' snapshots, by ledger topic index.
	ledger []snapshot.Topic
	// group is what the coordinator said of compare.group when its
	// offsets were read; nil without a group.
	group *finding.Group
}

// takeSnapshot reads, in this order: the due offsets of the sources (the
// group's committed offsets, or the offsets for the snapshot time minus
// the grace); the sinks' high watermarks, then each sink once every
// transaction open by then has ended (settled); then the sources' and the
// ledger topics' bounds.
//
// tails, when not nil, runs right after the due offsets (a stream stage's
// link tails, read before the sinks' high watermarks).
func takeSnapshot(ctx context.Context, o Options, ledgerTopics []string, tails func(context.Context, *compareSnapshot) error) (*compareSnapshot, error) {
	resolve := func(k engine.Kafka, topic string, role engine.Role, pair int) error {
		if err := engine.Resolve(ctx, k, topic, role, pair); err != nil {
			var mt *engine.MissingTopicError
			if errors.As(err, &mt) {
				return err
			}
			return fmt.Errorf("compare: %s topic %s: %w", role, topic, err)
		}
		return nil
	}
	var sources []string
	for i, p := range o.Pairs {
		if err := resolve(o.Source, p.Source, engine.RoleSource, i); err != nil {
			return nil, err
		}
		if err := resolve(o.Sink, p.Sink, engine.RoleSink, i); err != nil {
			return nil, err
		}
		sources = append(sources, p.Source)
	}
	for _, t := range ledgerTopics {
		if err := resolve(o.Source, t, engine.RoleLedger, -1); err != nil {
			return nil, err
		}
	}

	s := &compareSnapshot{at: o.Now(), due: map[kread.TP]int64{}, committed: make([]bool, len(o.Pairs)), sinkStartHW: map[string]map[int32]int64{}}
	if o.Group != "" && len(sources) > 0 {
		// A share group (KIP-932) has no committed offset per partition:
		// its records are acknowledged one by one. Its share-partition
		// start offsets (DescribeShareGroupOffsets) only say which records
		// are settled, not which were copied (ShareGroupError), so it is
		// refused rather than read as due offsets.
		gi, err := o.Source.DescribeGroup(ctx, o.Group)
		if err != nil {
			return nil, fmt.Errorf("compare: describing group %s: %w", o.Group, err)
		}
		if gi.Type == kread.GroupShare {
			return nil, &ShareGroupError{Group: o.Group}
		}
		s.group = &finding.Group{ID: o.Group, Type: string(gi.Type), State: gi.State, Members: gi.Members, Via: gi.Via}
		topics := sources
		if o.Stream != nil {
			// The links' committed offsets are read with the inputs',
			// in one consistent fetch: they bound the links' tails.
			topics = append(append([]string(nil), sources...), o.Stream.Links...)
		}
		g, err := o.Source.GroupOffsets(ctx, o.Group, topics)
		if err != nil {
			return nil, fmt.Errorf("compare: reading committed offsets of group %s: %w", o.Group, err)
		}
		s.due = g
		for i, p := range o.Pairs {
			for tp := range g {
				if tp.Topic == p.Source {
					s.committed[i] = true
					break
				}
			}
		}
	} else {
		cut := s.at.Add(-o.Grace)
		for i, p := range o.Pairs {
			offs, err := o.Source.OffsetsForTime(ctx, p.Source, cut)
			if err != nil {
				return nil, fmt.Errorf("compare: looking up offsets of %s for %s: %w", p.Source, cut.UTC().Format(time.RFC3339), err)
			}
			for part, off := range offs {
				s.due[kread.TP{Topic: p.Source, Partition: part}] = off
			}
			s.committed[i] = true
		}
	}

	if tails != nil {
		if err := tails(ctx, s); err != nil {
			return nil, err
		}
	}
	for _, p := range o.Pairs {
		if _, ok := s.sinkStartHW[p.Sink]; ok {
			continue
		}
		hw, err := snapshot.HighWatermarks(ctx, o.Sink, p.Sink)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		s.sinkStartHW[p.Sink] = hw
	}
	deadline := o.Now().Add(o.SettleTimeout)
	settled := map[string]snapshot.Topic{}
	for _, p := range o.Pairs {
		st, ok := settled[p.Sink]
		if !ok {
			var err error
			if st, err = snapshot.Settle(ctx, o.Sink, p.Sink, s.sinkStartHW[p.Sink], deadline, o.SettlePoll, o.Now); err != nil {
				return nil, fmt.Errorf("compare: %w", err)
			}
			settled[p.Sink] = st
		}
		s.sinks = append(s.sinks, st)
	}
	s.holders, s.holderErr = map[string]map[int32]*finding.TxnHolder{}, map[string]map[int32]string{}
	for name, st := range settled {
		s.holders[name], s.holderErr[name] = snapshot.NameHolders(ctx, o.Sink, st, s.sinkStartHW[name])
	}

	read := func(topic string) (snapshot.Topic, error) {
		st, err := snapshot.Read(ctx, o.Source, topic)
		if err != nil {
			return snapshot.Topic{}, fmt.Errorf("compare: %w", err)
		}
		return st, nil
	}
	byTopic := map[string]snapshot.Topic{}
	for _, p := range o.Pairs {
		st, ok := byTopic[p.Source]
		if !ok {
			var err error
			if st, err = read(p.Source); err != nil {
				return nil, err
			}
			byTopic[p.Source] = st
		}
		s.sources = append(s.sources, st)
	}
	for _, t := range ledgerTopics {
		st, ok := byTopic[t]
		if !ok {
			var err error
			if st, err = read(t); err != nil {
				return nil, err
			}
		}
		s.ledger = append(s.ledger, st)
	}
	return s, nil
}

// dueBelow returns the offset below which the records of source partition
// tp are due: the due offset capped at the partition's LSO, or its log
// start when nothing is due.
func (s *compareSnapshot) dueBelow(x int, p int32) int64 {
	t := s.sources[x]
	of := t.Offsets[p]
	d, ok := s.due[kread.TP{Topic: t.Name, Partition: p}]
	if !ok {
		return of.LogStart
	}
	return min(d, of.LSO)
}

// ShareGroupError says that the group deciding which records are due is a
// share group (KIP-932), which cannot say which records were copied.
//
// Why (KIP-932; SharePartition in Kafka's core): a share group has no
// committed offset per partition. The one offset it exposes per partition
// is the share-partition start offset (DescribeShareGroupOffsets), below
// which every record is in a terminal state: ACKNOWLEDGED (the consumer
// accepted it) or ARCHIVED (the consumer rejected it, its delivery count
// reached group.share.delivery.count.limit). The start offset also moves
// past records never delivered: initialised at the log end under
// share.auto.offset.reset=latest (the default), moved by an offset reset
// (AlterShareGroupOffsets) or to the log start after retention. The
// record states are the share coordinator's (ReadShareGroupState, a
// broker-to-broker request), not exposed to clients. So a record below the
// start offset without a copy may be lost, or dropped or skipped on
// purpose: reporting it missing would be a guess.
type ShareGroupError struct {
	Group string
}

func (e *ShareGroupError) Error() string {
	return fmt.Sprintf("group %s is a share group (KIP-932): it commits no offsets, and its share-partition start offsets say only that the records below them are settled (accepted, rejected, archived after the delivery limit, or skipped at initialization with share.auto.offset.reset=latest or by an offset reset), not that they were copied, so a record without a copy could not be told lost from dropped on purpose; use compare.grace instead (docs/compare.md, \"What is due\")", e.Group)
}
