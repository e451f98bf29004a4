// Package engine holds what every mode of the engine (the Kafka Streams
// audit, the comparison) shares besides its phases: the cluster as the
// modes see it (Kafka), the error naming a missing topic by its role
// (MissingTopicError), and the count of undecodable records
// (DecodeErrors). The phases live beneath it: snapshot (partition bounds,
// committed offsets, settling), collect (reading into the index), pass
// (the skeleton of one run that every mode fills in), phase (timings),
// detect (the detectors) and incremental (a reconciliation's steps).
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// Kafka is what the engine needs from a cluster; *kread.Client has it.
// Every method is read-only.
type Kafka interface {
	Partitions(ctx context.Context, topic string) ([]int32, error)
	Offsets(ctx context.Context, topic string) (map[int32]kread.Offsets, error)
	OffsetsForTime(ctx context.Context, topic string, t time.Time) (map[int32]int64, error)
	GroupOffsets(ctx context.Context, group string, topics []string) (map[kread.TP]int64, error)
	// DescribeGroup tells a group's type (Kafka 4.x: classic, consumer,
	// streams, share), state and members, by its type's describe API.
	DescribeGroup(ctx context.Context, group string) (kread.Group, error)
	// TransactionHolder names the open transaction holding a partition's
	// LSO; nil when none does.
	TransactionHolder(ctx context.Context, topic string, partition int32) (*kread.TxnHolder, error)
	Read(ctx context.Context, ranges []kread.Range, o kread.ReadOptions, fn func(recs []kread.Record) error) (map[kread.TP]kread.Stats, error)
}

// Role is what a topic is to the mode that reads it.
type Role string

// The roles of the Kafka Streams mode's topics (Index: the input's index,
// -1 for the output) and of the comparison's (Index: the pair's index, -1
// for a ledger topic).
const (
	RoleInput       Role = "input"
	RoleRepartition Role = "repartition"
	RoleChangelog   Role = "changelog"
	RoleOutput      Role = "output"
	RoleBuffer      Role = "suppress buffer changelog"
	RoleSource      Role = "source"
	RoleSink        Role = "sink"
	RoleLedger      Role = "ledger"
)

// MissingTopicError says that a topic a mode reads does not exist.
type MissingTopicError struct {
	Topic string
	Role  Role
	// Index is the input's or the pair's index, -1 when the role has none.
	Index int
	Err   error
}

func (e *MissingTopicError) Error() string {
	return fmt.Sprintf("%s topic %s: %v", e.Role, e.Topic, e.Err)
}

func (e *MissingTopicError) Unwrap() error { return e.Err }

// Resolve checks that topic exists: a *MissingTopicError when the cluster
// does not know it, the cluster's error (for the caller to wrap) when it
// cannot tell.
func Resolve(ctx context.Context, k Kafka, topic string, role Role, index int) error {
	_, err := k.Partitions(ctx, topic)
	if errors.Is(err, kread.ErrUnknownTopic) {
		return &MissingTopicError{Topic: topic, Role: role, Index: index, Err: err}
	}
	return err
}

// maxDecodeSamples bounds the decode errors quoted with their coordinates.
const maxDecodeSamples = 10

// maxNearTries bounds the records asked for nearby field paths per input.
const maxNearTries = 3

// DecodeErrors counts undecodable records by class (an error with a method
// `Class() string` names its class, others are "other"), overall and per
// input (or pair), keeps the first samples, and, per input, the field
// paths nearest to the configured one; safe for concurrent use.
type DecodeErrors struct {
	mu sync.Mutex
	// ByClass counts the records by class; Samples are the first ones.
	// Read them once the reads are over.
	ByClass map[string]int64
	Samples []finding.DecodeErrorSample
	// Near is, per input, the field paths nearest to the configured one,
	// found for an early undecodable record.
	Near     map[int][]string
	perInput map[int]map[string]int64
	tries    map[int]int
}

// Add counts rec, undecodable with err, for input x. near, when not nil,
// returns the writer schema's field paths nearest to the configured one;
// it is asked for a few early records of each input until it answers.
func (d *DecodeErrors) Add(x int, rec *kread.Record, err error, near func(rec *kread.Record) []string) {
	class := "other"
	var c interface{ Class() string }
	if errors.As(err, &c) {
		class = c.Class()
	}
	d.mu.Lock()
	if d.ByClass == nil {
		d.ByClass, d.perInput, d.Near, d.tries = map[string]int64{}, map[int]map[string]int64{}, map[int][]string{}, map[int]int{}
	}
	d.ByClass[class]++
	if d.perInput[x] == nil {
		d.perInput[x] = map[string]int64{}
	}
	d.perInput[x][class]++
	if len(d.Samples) < maxDecodeSamples {
		d.Samples = append(d.Samples, finding.DecodeErrorSample{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Error: fmt.Sprint(err)})
	}
	ask := near != nil && d.Near[x] == nil && d.tries[x] < maxNearTries
	if ask {
		d.tries[x]++
	}
	d.mu.Unlock()
	if ask {
		if n := near(rec); n != nil {
			d.mu.Lock()
			d.Near[x] = n
			d.mu.Unlock()
		}
	}
}

// PerInput returns the counts per input and class (a shard's part of a
// sharded audit, for Merge); read it once the reads are over.
func (d *DecodeErrors) PerInput() map[int]map[string]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.perInput
}

// Merge adds another reader's counts per input and class, samples (up to
// the bound) and nearest field paths (where d has none) to d.
func (d *DecodeErrors) Merge(perInput map[int]map[string]int64, samples []finding.DecodeErrorSample, near map[int][]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(perInput) == 0 && len(samples) == 0 && len(near) == 0 {
		return
	}
	if d.ByClass == nil {
		d.ByClass, d.perInput, d.Near, d.tries = map[string]int64{}, map[int]map[string]int64{}, map[int][]string{}, map[int]int{}
	}
	for x, m := range perInput {
		if d.perInput[x] == nil {
			d.perInput[x] = map[string]int64{}
		}
		for class, n := range m {
			d.perInput[x][class] += n
			d.ByClass[class] += n
		}
	}
	for _, s := range samples {
		if len(d.Samples) < maxDecodeSamples {
			d.Samples = append(d.Samples, s)
		}
	}
	for x, n := range near {
		if d.Near[x] == nil {
			d.Near[x] = n
		}
	}
}

// Top returns input x's most frequent class ("" for none).
func (d *DecodeErrors) Top(x int) string { return top(d.perInput[x]) }

func top(m map[string]int64) string {
	best, n := "", int64(0)
	for c, k := range m {
		if k > n || (k == n && c < best) {
			best, n = c, k
		}
	}
	return best
}
