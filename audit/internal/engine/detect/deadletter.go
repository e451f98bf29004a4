package detect

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/lossaudit/lossaudit/audit/kread"
)

// The headers Kafka Streams (4.2+, KIP-1034) puts on every dead-letter
// record (ExceptionHandlerUtils#buildDeadLetterQueueRecord), each a UTF-8
// string: the exception's class name, its message, its stack trace, and
// the topic, partition and offset of the record the task was processing
// (ErrorHandlerContext: the source record of the failing subtopology, an
// input or, after a repartition, the repartition topic's record).
const (
	HeaderDLQException = "__streams.errors.exception"
	HeaderDLQMessage   = "__streams.errors.message"
	HeaderDLQTopic     = "__streams.errors.topic"
	HeaderDLQPartition = "__streams.errors.partition"
	HeaderDLQOffset    = "__streams.errors.offset"
)

// DeadLetterSource is what one dead-letter record says of the record the
// application failed on.
type DeadLetterSource struct {
	Topic     string
	Partition int32
	Offset    int64
	// Exception and Message are the error recorded ("" when absent).
	Exception, Message string
}

// ParseDeadLetter reads the __streams.errors.* headers of a dead-letter
// record (kread.Record.Headers). The builder adds them after the headers
// it copies from the failed record, so when a name repeats (a record that
// went through a dead-letter queue before) the last one is this record's.
// Topic, partition and offset must all be there, non-null and decimal
// (partition and offset not negative: a punctuation's failure has no
// source record and names none); else the record names no source and the
// error says why.
func ParseDeadLetter(headers []byte) (DeadLetterSource, error) {
	var s DeadLetterSource
	var topic, part, off []byte
	var seen [3]bool
	err := kread.EachHeader(headers, func(k, v []byte) bool {
		switch string(k) {
		case HeaderDLQTopic:
			topic, seen[0] = v, true
		case HeaderDLQPartition:
			part, seen[1] = v, true
		case HeaderDLQOffset:
			off, seen[2] = v, true
		case HeaderDLQException:
			s.Exception = string(v)
		case HeaderDLQMessage:
			s.Message = string(v)
		}
		return true
	})
	if err != nil {
		return s, err
	}
	for i, name := range []string{HeaderDLQTopic, HeaderDLQPartition, HeaderDLQOffset} {
		if !seen[i] {
			return s, fmt.Errorf("no %s header", name)
		}
	}
	if len(topic) == 0 {
		return s, fmt.Errorf("%s is empty or null", HeaderDLQTopic)
	}
	p, err := strconv.ParseInt(string(part), 10, 32)
	if err != nil || p < 0 {
		return s, fmt.Errorf("%s %q is no partition", HeaderDLQPartition, part)
	}
	o, err := strconv.ParseInt(string(off), 10, 64)
	if err != nil || o < 0 {
		return s, fmt.Errorf("%s %q is no offset", HeaderDLQOffset, off)
	}
	s.Topic, s.Partition, s.Offset = string(topic), int32(p), o
	return s, nil
}

// DeadLetterRecord is one record of the dead-letter queue that names its
// source.
type DeadLetterRecord struct {
	DeadLetterSource
	// DLQPartition and DLQOffset locate the dead-letter record.
	DLQPartition int32
	DLQOffset    int64
}

// MaxDeadLetters bounds the dead-letter records one run keeps in memory.
const MaxDeadLetters = 1 << 20

// ErrTooManyDeadLetters is returned by DeadLetters.Add past MaxDeadLetters.
var ErrTooManyDeadLetters = fmt.Errorf("more than %d dead-letter records", MaxDeadLetters)

// DeadLetters indexes a dead-letter queue's records by the source record
// they name. Add is called by one goroutine before any lookup; Exempt and
// Use are safe for concurrent use once the adds are done.
type DeadLetters struct {
	recs []DeadLetterRecord
	used []atomic.Bool
	at   map[kread.TP]map[int64]int
}

// Add indexes r; a second record naming the same source (a record
// dead-lettered twice, e.g. processed again after a crash under
// at_least_once) keeps the first.
func (d *DeadLetters) Add(r DeadLetterRecord) (int, error) {
	if d.at == nil {
		d.at = map[kread.TP]map[int64]int{}
	}
	tp := kread.TP{Topic: r.Topic, Partition: r.Partition}
	m := d.at[tp]
	if m == nil {
		m = map[int64]int{}
		d.at[tp] = m
	}
	if i, ok := m[r.Offset]; ok {
		return i, nil
	}
	if len(d.recs) >= MaxDeadLetters {
		return 0, ErrTooManyDeadLetters
	}
	d.recs = append(d.recs, r)
	m[r.Offset] = len(d.recs) - 1
	return len(d.recs) - 1, nil
}

// Len returns how many distinct source records the queue names.
func (d *DeadLetters) Len() int { return len(d.recs) }

// Exempt reports whether the record at (tp, offset) was dead-lettered and
// so dropped on purpose, and marks the dead-letter record used. processed
// says whether the offset is below the group's committed offset on tp.
//
// Proof: under exactly-once, Kafka Streams writes a dead-letter record in
// the transaction that commits the consumed offset past the failed record
// (the handler answered RESUME); read committed, the dead-letter record
// exists only if that transaction committed, so the record was skipped on
// purpose. A record at or above the committed offset is not exempt: the
// application has not skipped it (LogAndFail handlers with a dead-letter
// queue write the record and stop; under at_least_once the dead-letter
// record can be written before a crash that processes the record again).
func (d *DeadLetters) Exempt(tp kread.TP, offset int64, processed bool) (DeadLetterRecord, bool) {
	if !processed || d.at == nil {
		return DeadLetterRecord{}, false
	}
	i, ok := d.at[tp][offset]
	if !ok {
		return DeadLetterRecord{}, false
	}
	d.Use(i)
	return d.recs[i], true
}

// Use marks the i-th dead-letter record used (it exempted a record).
func (d *DeadLetters) Use(i int) {
	if d.used == nil {
		return
	}
	d.used[i].Store(true)
}

// Seal ends the adds: lookups may start.
func (d *DeadLetters) Seal() { d.used = make([]atomic.Bool, len(d.recs)) }

// Record returns the i-th dead-letter record.
func (d *DeadLetters) Record(i int) DeadLetterRecord { return d.recs[i] }

// Unused counts the dead-letter records that exempted no record.
func (d *DeadLetters) Unused() int64 {
	var n int64
	for i := range d.used {
		if !d.used[i].Load() {
			n++
		}
	}
	return n
}
