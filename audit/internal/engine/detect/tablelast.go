package detect

import "github.com/lossaudit/lossaudit/audit/finding"

// TableRecord is one record of a key in a table source's input topic or
// in its changelog: where it is, its timestamp, and whether it is a
// tombstone (a null value: a delete).
type TableRecord struct {
	Partition int32
	Offset    int64
	TS        int64
	Tombstone bool
}

// TableInput is what is known of one table-source input (builder.table or
// KStream#toTable reading the input topic itself) for one key, per
// partition of the input.
type TableInput struct {
	// Last holds, per input partition, the key's last processed record by
	// offset that counts (committed, below the group's committed offset,
	// in the window, a value or a tombstone).
	Last map[int32]TableRecord
	// Records holds, per input partition, every record of the key read,
	// whether it counts or not: those after Last (read at or after the
	// group's committed offset: not processed when the offsets were read,
	// but possibly since; or processed without counting: undecodable,
	// outside the window) may be what the table holds; those before it
	// witness a lost update when the table holds one of them.
	Records map[int32][]TableRecord
	// Changelog holds, per changelog partition, the key's last committed
	// changelog record by offset.
	Changelog map[int32]TableRecord
}

// reset empties t for the next key.
func (t *TableInput) reset() {
	clear(t.Last)
	clear(t.Records)
	clear(t.Changelog)
}

// AddLast records a record of the table-source input that counts, keeping
// the last by offset of its partition.
func (t *TableInput) AddLast(r TableRecord) {
	if t.Last == nil {
		t.Last = map[int32]TableRecord{}
	}
	if o, ok := t.Last[r.Partition]; !ok || r.Offset > o.Offset {
		t.Last[r.Partition] = r
	}
}

// AddRecord records a record of the table-source input, whether it counts
// or not (see Records).
func (t *TableInput) AddRecord(r TableRecord) {
	if t.Records == nil {
		t.Records = map[int32][]TableRecord{}
	}
	t.Records[r.Partition] = append(t.Records[r.Partition], r)
}

// AddChangelog records a committed changelog record of the table, keeping
// the last by offset of its partition.
func (t *TableInput) AddChangelog(r TableRecord) {
	if t.Changelog == nil {
		t.Changelog = map[int32]TableRecord{}
	}
	if o, ok := t.Changelog[r.Partition]; !ok || r.Offset > o.Offset {
		t.Changelog[r.Partition] = r
	}
}

// Evidence returns the key's last processed record, when the key's
// records that count lie in one partition of the input; ok is false
// otherwise (none, or in several partitions: tasks of different
// partitions keep separate stores, so no one record is the last).
func (t *TableInput) Evidence() (last TableRecord, ok bool) {
	if len(t.Last) != 1 {
		return TableRecord{}, false
	}
	for _, r := range t.Last {
		last = r
	}
	for p := range t.Records {
		if p != last.Partition {
			return TableRecord{}, false // records in another partition: another task's store
		}
	}
	return last, true
}

// TableLast is the rule of a table stage written by a table source
// (KTABLE-SOURCE- of builder.table, KSTREAM-TOTABLE- of KStream#toTable)
// that reads its input topic itself: for a key whose last processed
// record by offset in its input partition is last, the table's changelog
// partition of the same number, whose last record by offset for the key is
// cl (has false when it holds none), must hold last or one of the key's
// records after it (records: the key's records of that partition, all of
// them). Records match by timestamp and by being a value or a tombstone;
// an absent key matches a tombstone (a delete whose changelog tombstone
// was compacted away). A changelog ending with a record that matches
// none of them is reported only with a witness: stale when it matches a
// record before last (witness is that record: the table kept it, and lost
// what followed), missing when it holds nothing and last is a value. One
// that matches no record of the input is not judged (witnessed false):
// the application's timestamps are not the records' own (a timestamp
// extractor), or the input no longer holds the record it came from.
//
// Proof: KTableSource#process (kstream/internals/KTableSource.java) puts
// every record with a non-null key into the store with the record's own
// timestamp, whatever the timestamp of the value it replaces (an older
// one only logs "Detected out-of-order KTable update"), and a null value
// deletes the key; KStream#toTable builds the same KTableSource. The store
// is the task's, and the task of input partition p writes changelog
// partition p (ProcessorStateManager: the changelog partition is the
// task's partition). A timestamped store logs each put with the value's
// timestamp, and a delete as a tombstone with the record's
// (ChangeLoggingTimestampedKeyValueBytesStore#put). Caching only drops
// overwritten values between flushes, and a commit flushes the store
// before it commits the offsets, so once last is below the committed
// offset the changelog holds last's put or a put of a record processed
// after it, later by offset; the changelog is read after the offsets, and
// the input is read to its end after the changelog, so every record whose
// put the changelog can hold is in last or the records after it. The
// value bytes are not compared: the store writes them with its own serde,
// which may encode an equal value differently. So a changelog ending with
// an earlier record's put, or with nothing while last is a value, lost
// last's update. The max-timestamp rule (TableMax) would be wrong here: a
// table keeps an out-of-order update whose timestamp is older than the
// value it replaced.
func TableLast(last TableRecord, records []TableRecord, cl TableRecord, has bool) (kind finding.Kind, bad bool, witness TableRecord) {
	matches := func(r TableRecord) bool {
		if !has {
			return r.Tombstone
		}
		return r.TS == cl.TS && r.Tombstone == cl.Tombstone
	}
	if matches(last) {
		return "", false, TableRecord{}
	}
	for _, r := range records {
		if r.Offset > last.Offset && matches(r) {
			return "", false, TableRecord{}
		}
	}
	if !has {
		return finding.Missing, true, TableRecord{}
	}
	// The newest earlier record it matches is the witness.
	found := false
	for _, r := range records {
		if r.Offset < last.Offset && matches(r) && (!found || r.Offset > witness.Offset) {
			witness, found = r, true
		}
	}
	if !found {
		return "", false, TableRecord{}
	}
	return finding.Stale, true, witness
}
