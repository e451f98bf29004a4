package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// pipelineSnapshot is what the snapshot phase saw of the pipeline's
// topics, in the order that makes the audit sound.
type pipelineSnapshot struct {
	// group holds the group's committed offsets on inputs and repartition
	// topics.
	group map[kread.TP]int64
	// groupActive is true when the group had members when its offsets were
	// read, or when its state could not be told.
	groupActive bool
	// groupInfo is what the coordinator said of the group then.
	groupInfo finding.Group
	// recheck holds the committed offsets of the input partitions that
	// were below their log start, read again after the log start.
	recheck map[kread.TP]int64
	// first holds the first committed record of the input partitions
	// with records and no committed offset, on topics the group consumes.
	first map[kread.TP]detect.FirstRecord
	// holders names, by topic and partition, the open transaction holding
	// the LSO of the changelog and output partitions that did not settle;
	// holderErr says why one could not be named.
	holders   map[string]map[int32]*finding.TxnHolder
	holderErr map[string]map[int32]string
	// startHW holds the high watermarks of the changelogs and the output
	// read after the repartition tails (snapshot step 4), by topic.
	startHW    map[string]map[int32]int64
	inputs     []snapshot.Topic
	reparts    []snapshot.Topic
	changelogs []snapshot.Topic
	output     snapshot.Topic
	// buffers holds, per input, its suppress buffer's changelog, settled
	// before the changelogs' and the output's marks are read; a zero
	// Topic for an input without one.
	buffers []snapshot.Topic
}

// takeSnapshot reads, in this order, the group's committed offsets and the
// bounds of the inputs and repartition topics: the first half of the
// snapshot. The caller reads the repartition tails, then completes it with
// settleDownstream. Every later snapshot then holds every transaction an
// earlier one does (docs/design.md, "Snapshot order").
func takeSnapshot(ctx context.Context, o Options) (*pipelineSnapshot, error) {
	type named struct {
		topic string
		role  engine.Role
		input int
	}
	var all []named
	var groupTopics []string
	for i, in := range o.Inputs {
		all = append(all, named{in.Topic, engine.RoleInput, i}, named{in.RepartitionTopic, engine.RoleRepartition, i}, named{in.ChangelogTopic, engine.RoleChangelog, i})
		groupTopics = append(groupTopics, in.Topic)
		if in.RepartitionTopic != "" {
			groupTopics = append(groupTopics, in.RepartitionTopic)
		}
	}
	if o.Output != "" {
		all = append(all, named{o.Output, engine.RoleOutput, -1})
	}
	for i, in := range o.Inputs {
		if in.BufferTopic != "" {
			all = append(all, named{in.BufferTopic, engine.RoleBuffer, i})
		}
	}
	// Resolve every topic first, so a missing one fails before anything is read.
	for _, t := range all {
		if t.topic == "" {
			continue // a table source's repartition topic, or its changelog under the source-topic optimization: none
		}
		if err := engine.Resolve(ctx, o.Kafka, t.topic, t.role, t.input); err != nil {
			var mt *engine.MissingTopicError
			if errors.As(err, &mt) {
				return nil, err
			}
			return nil, fmt.Errorf("audit: topic %s: %w", t.topic, err)
		}
	}
	s := &pipelineSnapshot{startHW: map[string]map[int32]int64{}}
	var err error
	if s.group, err = o.Kafka.GroupOffsets(ctx, o.Group, groupTopics); err != nil {
		return nil, fmt.Errorf("audit: reading committed offsets of group %s: %w", o.Group, err)
	}
	// Whether the application is consuming: only used to tell a group
	// stuck at an undecodable record, so not knowing is no failure. Each
	// group type is described by its own API: DescribeGroups says Dead with
	// no members for a running consumer, streams or share group of Kafka 4.x.
	if g, err := o.Kafka.DescribeGroup(ctx, o.Group); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("audit: describing group %s: %w", o.Group, err)
		}
		s.groupActive = true
		s.groupInfo = finding.Group{ID: o.Group, Members: -1, Error: err.Error()}
	} else {
		s.groupActive = g.Active()
		s.groupInfo = finding.Group{ID: o.Group, Type: string(g.Type), State: g.State, Members: g.Members, Via: g.Via}
	}
	read := func(topics []string) ([]snapshot.Topic, error) {
		var out []snapshot.Topic
		for _, t := range topics {
			if t == "" {
				out = append(out, snapshot.Topic{}) // none: see Resolve above
				continue
			}
			st, err := snapshot.Read(ctx, o.Kafka, t)
			if err != nil {
				return nil, fmt.Errorf("audit: %w", err)
			}
			out = append(out, st)
		}
		return out, nil
	}
	var inputs, reparts []string
	for _, in := range o.Inputs {
		inputs = append(inputs, in.Topic)
		reparts = append(reparts, in.RepartitionTopic)
	}
	if s.inputs, err = read(inputs); err != nil {
		return nil, err
	}
	if err := s.inputEdges(ctx, o); err != nil {
		return nil, err
	}
	if s.reparts, err = read(reparts); err != nil {
		return nil, err
	}
	return s, nil
}

// inputEdges reads what the offset_out_of_range and unprocessed_partition
// checks need beyond the snapshot: the committed offsets of input
// partitions below their log start again (read after the log start), and
// the first record of input partitions the group has not committed on.
func (s *pipelineSnapshot) inputEdges(ctx context.Context, o Options) error {
	var parts []snapshot.Partition
	for _, t := range s.inputs {
		parts = append(parts, t.Partitions(s.group)...)
	}
	if below := detect.BelowLogStart(parts); len(below) > 0 {
		var topics []string
		for _, tp := range below {
			if !slices.Contains(topics, tp.Topic) {
				topics = append(topics, tp.Topic)
			}
		}
		again, err := o.Kafka.GroupOffsets(ctx, o.Group, topics)
		if err != nil {
			return fmt.Errorf("audit: reading committed offsets of group %s again: %w", o.Group, err)
		}
		s.recheck = map[kread.TP]int64{}
		for _, tp := range below {
			if c, ok := again[tp]; ok {
				s.recheck[tp] = c
			}
		}
	}
	s.first = map[kread.TP]detect.FirstRecord{}
	for _, p := range detect.WithoutCommit(parts) {
		tp := kread.TP{Topic: p.Topic, Partition: p.Partition}
		// The first committed record may follow aborted records and
		// markers: read windows that double from 16 offsets until one
		// holds a record or the LSO is reached, so the cost stays about
		// twice the offsets before it.
		for from, n := p.LogStart, int64(16); from < p.LSO && !s.first[tp].Has; from, n = from+n, 2*n {
			rg := kread.Range{Topic: p.Topic, Partition: p.Partition, From: from, To: min(p.LSO, from+n)}
			err := collect.Read(ctx, o.Kafka, collect.Spec{Ranges: []kread.Range{rg}}, func(recs []kread.Record) error {
				if f := s.first[tp]; len(recs) > 0 && !f.Has {
					s.first[tp] = detect.FirstRecord{Timestamp: recs[0].Timestamp, Has: true}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("audit: reading the first record of %s[%d]: %w", p.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

// settleDownstream completes the snapshot, after the repartition tails
// have been read: the high watermarks of the changelogs and the output,
// then each of their partitions once its LSO has reached that mark.
//
// The tails must be read first: Kafka Streams purges a repartition
// partition up to its committed offset after every commit, so a
// transaction committed after the group offsets were read can process a
// tail copy at the second hop and purge it before the audit reads the
// tail. Its changelog and output writes are then below high watermarks
// read after the tails, and the record is judged with them; marks read
// before the tails would miss them, and the record would look lost.
//
// A suppress buffer's changelog is settled first, before the other marks
// are read: a tombstone there says the key was emitted to the output in
// the tombstone's transaction, so that transaction must have ended, and
// its output write be below the output's mark, before that mark is read
// (detect.BufferPending).
func (s *pipelineSnapshot) settleDownstream(ctx context.Context, o Options) error {
	if err := s.settleBuffers(ctx, o); err != nil {
		return err
	}
	var down []string
	for _, in := range o.Inputs {
		down = append(down, in.ChangelogTopic)
	}
	if o.Output != "" {
		down = append(down, o.Output)
	}
	for _, t := range down {
		if t == "" {
			continue
		}
		hw, err := snapshot.HighWatermarks(ctx, o.Kafka, t)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		s.startHW[t] = hw
	}
	s.changelogs = s.changelogs[:0]
	deadline := o.Now().Add(o.SettleTimeout)
	for _, t := range down {
		if t == "" {
			s.changelogs = append(s.changelogs, snapshot.Topic{})
			continue
		}
		st, err := snapshot.Settle(ctx, o.Kafka, t, s.startHW[t], deadline, o.SettlePoll, o.Now)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		if t == o.Output {
			s.output = st
		} else {
			s.changelogs = append(s.changelogs, st)
		}
	}
	s.nameHolders(ctx, o)
	return ctx.Err()
}

// settleBuffers reads the high watermarks of the inputs' suppress buffer
// changelogs, then waits for each partition's LSO to reach its mark.
func (s *pipelineSnapshot) settleBuffers(ctx context.Context, o Options) error {
	s.buffers = make([]snapshot.Topic, len(o.Inputs))
	deadline := o.Now().Add(o.SettleTimeout)
	for x, in := range o.Inputs {
		if in.BufferTopic == "" {
			continue
		}
		hw, err := snapshot.HighWatermarks(ctx, o.Kafka, in.BufferTopic)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		s.startHW[in.BufferTopic] = hw
		if s.buffers[x], err = snapshot.Settle(ctx, o.Kafka, in.BufferTopic, hw, deadline, o.SettlePoll, o.Now); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
	}
	return nil
}

// withBuffers returns topics and the suppress buffers' changelogs.
func (s *pipelineSnapshot) withBuffers(topics []snapshot.Topic) []snapshot.Topic {
	for _, b := range s.buffers {
		if b.Name != "" {
			topics = append(topics, b)
		}
	}
	return topics
}

// nameHolders asks, for every changelog and output partition whose LSO
// stayed below its mark, which open transaction holds it, so that the
// stuck_lso finding names it and the command that aborts it. Not knowing
// is no failure: the finding stands on the offsets alone.
func (s *pipelineSnapshot) nameHolders(ctx context.Context, o Options) {
	s.holders, s.holderErr = map[string]map[int32]*finding.TxnHolder{}, map[string]map[int32]string{}
	s.nameHoldersOf(ctx, o, s.withBuffers(append(slices.Clone(s.changelogs), s.output)))
}

// nameHoldersOf names the holders of the partitions of topics whose LSO
// stayed below their mark (see nameHolders).
func (s *pipelineSnapshot) nameHoldersOf(ctx context.Context, o Options, topics []snapshot.Topic) {
	for _, t := range topics {
		h, e := snapshot.NameHolders(ctx, o.Kafka, t, s.startHW[t.Name])
		if h != nil {
			s.holders[t.Name] = h
		}
		if e != nil {
			s.holderErr[t.Name] = e
		}
	}
}

// partitions lists what the snapshot saw of every audited partition, with
// the group's committed offsets.
func (s *pipelineSnapshot) partitions() []snapshot.Partition {
	var out []snapshot.Partition
	for i := range s.inputs {
		out = append(out, s.inputs[i].Partitions(s.group)...)
		out = append(out, s.reparts[i].Partitions(s.group)...)
		out = append(out, s.changelogs[i].Partitions(s.group)...)
	}
	for _, b := range s.withBuffers(nil) {
		out = append(out, b.Partitions(s.group)...)
	}
	return append(out, s.output.Partitions(s.group)...)
}
