package detect

// GroupRecord is one processed record of a table groupBy's input (a table
// source read from its own topic, then KTable#groupBy and count, reduce or
// aggregate): where
// it is, its timestamp, and what its value gives the KeyValueMapper.
type GroupRecord struct {
	Partition int32
	Offset    int64
	TS        int64
	// Tombstone is a null value: a delete.
	Tombstone bool
	// Group is the group key the declared field path gives the value; nil
	// when it gives none (a null group key, or a value that does not
	// decode: NoGroup).
	Group []byte
	// NoGroup says that the value has no group key the audit can tell.
	NoGroup bool
}

// GroupByLast keeps, per input partition and input key, the last processed
// record by offset of a table groupBy's input (Later), and says which group
// key must hold which timestamp (GroupRecord.Owed): the rule of the table-group-max stage, whose
// candidates are then judged per group key by TableMax (the changelog)
// and the output rule (OutputLeftJoin with one input), as a reduce's are.
//
// The rule: for every input key k and input partition p whose last
// processed record r by offset is a value with group key g, the
// aggregation's changelog, and the output after toStream, hold g at a timestamp at least
// r's. A key whose last processed record is a tombstone, or a value with a
// null or unknown group key, expects nothing; neither does any record
// before the last.
//
// Proof (apache/kafka at 1eb7644, kstream/internals/): KTableSource#process
// puts each record with a non-null key into the task's store with the
// record's own timestamp whatever the one it replaces (last by offset, not
// newest by timestamp, for a key-value store), and forwards Change(new,
// old); with caching, TimestampedCacheFlushListener forwards the key's
// newest value at its stored timestamp, and a commit flushes the cache
// before it commits the input offsets. So once r is below the committed
// offset, a committed transaction forwarded Change(r's value, some old
// value) at r's timestamp, or a later record of k did (processed since).
// KTableRepartitionMap maps the new value to (g, value) and forwards it to
// the repartition topic at that timestamp (alone, Change(new, null), or
// with the old value when both map to one key: KIP-904), unless g or the
// mapped value is null (skipped), so every record it forwards carries a
// new value, an old one or both. KTableAggregate#process (count and
// aggregate) and KTableReduce#process (reduce), on a record with a new
// value, write the group at the record's timestamp when the group held
// none, else at max(record ts, old aggregate ts); on the subtractor's path
// (an old value, the group holding one) they write max(record ts, old
// aggregate ts) too, whatever the adder does next; a null result is put as
// a delete, a tombstone at that timestamp. The store value's timestamp is
// what its changelog logs and what the cache flush forwards to toStream.
// So while a group holds a value every write of it is at least as new as
// the one before, and the write that added r's value was at least r's
// timestamp: the group's timestamp can fall below r's only after a write
// of a null result, and only when the next write after it found no value.
// For count() (KGroupedTableImpl#count: the adder adds one, the subtractor
// takes one away) the aggregate is never null. For reduce() and
// aggregate() the adder and subtractor are the application's: a null
// result while the group still has a member (an input key whose last
// record is in it) is outside this rule, the "aggregator returning null"
// limitation the stream aggregations have too (documented, not
// detected); a null result when the group's last member left (its
// subtraction emptied it) owes nothing, since every key that joins the
// group afterwards is added at least at its own timestamp. Hence g holds
// at least r's timestamp once r's repartition copy is processed (not in
// the repartition topic's unprocessed tail: then it is pending). The
// check (TableMax) reads the changelog's newest record of g by timestamp,
// a tombstone included, so even a null result while the group has
// members, written at max(...), covers them; it makes a false finding only
// when the cache coalesces it with an older restart into one flush, or
// compaction removes the newer record. So does a group emptied by a
// member's later record processed after the audit read the offsets (the
// member is still owed, its add's write is older than the restart) if
// compaction removed that write before the changelog was read. The other
// way round, a tombstone newer than a restart covers the restarted group's
// members too, so an add lost after an older restart goes unseen: a missed
// finding, never a false one. Checked in apache/kafka at 1eb7644 and the
// 3.6.2 tag (identical but for a rename), and in kafka-streams 4.4.0's
// bytecode (the same branches; the store value carries headers).
//
// Why nothing else is expected: the records before r of k, and r's old
// value's subtraction, may never have been forwarded: the cache coalesces
// a key's updates between flushes into one Change(newest, value before the
// first), so a key moved from g1 to g2 and back within one flush never
// touches g2, and a key created and deleted within one flush touches no
// group at all. The timestamps are the records' own (the default extractor); a
// versioned source store (KIP-914) forwards only updates that are the
// newest by timestamp (KTableRepartitionMap skips the others), so it is
// not audited by this rule (describe() prints it alike: documented); a
// versioned store for the aggregation (Materialized.as a versioned
// supplier) refuses a put older than its history retention
// (RocksDBVersionedStore#put: not forwarded, though logged), so it is
// outside the rule too (documented).
//
// GroupByLast keeps its rows in memory; the audit folds them in its
// on-disk index instead (one entry per partition and key, kept by Later's
// order) and applies Owed to each.
type GroupByLast struct {
	last map[int32]map[string]GroupRecord
}

// Add records a processed record of input key key (below the group's
// committed offset on its partition): the last by offset per partition
// and key is kept.
func (g *GroupByLast) Add(key []byte, r GroupRecord) {
	if g.last == nil {
		g.last = map[int32]map[string]GroupRecord{}
	}
	m := g.last[r.Partition]
	if m == nil {
		m = map[string]GroupRecord{}
		g.last[r.Partition] = m
	}
	if o, ok := m[string(key)]; ok {
		r = Later(o, r)
	}
	m[string(key)] = r
}

// Later returns whichever of a and b, records of one input key in one
// partition, is later by offset: the one the table keeps.
func Later(a, b GroupRecord) GroupRecord {
	if b.Offset > a.Offset {
		return b
	}
	return a
}

// Owed returns the group key that must hold r, the last processed record
// by offset of its input key in its partition, at least as new as r; ok is
// false when r owes nothing (a delete, or a value without a group key).
func (r GroupRecord) Owed() (group []byte, ok bool) {
	if r.Tombstone || r.NoGroup || r.Group == nil {
		return nil, false
	}
	return r.Group, true
}

// Len returns the number of (partition, key) rows kept.
func (g *GroupByLast) Len() int {
	n := 0
	for _, m := range g.last {
		n += len(m)
	}
	return n
}

// Each calls fn with the group key and the record of every row whose last
// record expects its group to hold it (a value with a group key), in no
// particular order; it stops at fn's first error.
func (g *GroupByLast) Each(fn func(group []byte, r GroupRecord) error) error {
	for _, m := range g.last {
		for _, r := range m {
			g, ok := r.Owed()
			if !ok {
				continue
			}
			if err := fn(g, r); err != nil {
				return err
			}
		}
	}
	return nil
}
