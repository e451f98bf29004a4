package detect

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/lossaudit/lossaudit/audit/kread"
)

// headers encodes record headers as a batch does; a nil value is null.
func headers(kv ...*string) []byte {
	b := binary.AppendVarint(nil, int64(len(kv)/2))
	for i := 0; i < len(kv); i += 2 {
		b = binary.AppendVarint(b, int64(len(*kv[i])))
		b = append(b, *kv[i]...)
		if kv[i+1] == nil {
			b = binary.AppendVarint(b, -1)
			continue
		}
		b = binary.AppendVarint(b, int64(len(*kv[i+1])))
		b = append(b, *kv[i+1]...)
	}
	return b
}

func sp(s string) *string { return &s }

func TestParseDeadLetter(t *testing.T) {
	topic, part, off := sp(HeaderDLQTopic), sp(HeaderDLQPartition), sp(HeaderDLQOffset)
	exc, msg := sp(HeaderDLQException), sp(HeaderDLQMessage)
	tests := []struct {
		name    string
		headers []byte
		want    string // "topic[p]@o exception: message", or "error"
	}{
		{"as Kafka Streams writes it", headers(sp("orig"), sp("x"), exc, sp("org.apache.kafka.common.errors.SerializationException"),
			msg, sp("not Confluent-framed Avro in in-a"), sp("__streams.errors.stacktrace"), sp("..."), topic, sp("in-a"), part, sp("0"), off, sp("41")),
			"in-a[0]@41 org.apache.kafka.common.errors.SerializationException: not Confluent-framed Avro in in-a"},
		{"a null message", headers(exc, sp("java.lang.NullPointerException"), msg, nil, topic, sp("app-s-repartition"), part, sp("2"), off, sp("7")),
			"app-s-repartition[2]@7 java.lang.NullPointerException: "},
		{"copied headers of an earlier dead-letter record come first; the last wins",
			headers(topic, sp("old"), part, sp("9"), off, sp("9"), topic, sp("in-b"), part, sp("1"), off, sp("3")), "in-b[1]@3 : "},
		{"no headers", nil, "error"},
		{"no offset", headers(topic, sp("in-a"), part, sp("0")), "error"},
		{"a punctuation's failure names no record", headers(topic, nil, part, sp("-1"), off, sp("-1")), "error"},
		{"a negative offset", headers(topic, sp("in-a"), part, sp("0"), off, sp("-1")), "error"},
		{"not a number", headers(topic, sp("in-a"), part, sp("zero"), off, sp("1")), "error"},
		{"a partition past int32", headers(topic, sp("in-a"), part, sp("4294967296"), off, sp("1")), "error"},
		{"garbled", []byte{0x04, 0x02}, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseDeadLetter(tt.headers)
			got := "error"
			if err == nil {
				got = fmt.Sprintf("%s[%d]@%d %s: %s", s.Topic, s.Partition, s.Offset, s.Exception, s.Message)
			}
			if got != tt.want {
				t.Errorf("got %q (%v), want %q", got, err, tt.want)
			}
		})
	}
}

func TestDeadLettersExempt(t *testing.T) {
	var d DeadLetters
	for _, r := range []DeadLetterRecord{
		{DeadLetterSource: DeadLetterSource{Topic: "in-a", Partition: 0, Offset: 5}, DLQOffset: 0},
		{DeadLetterSource: DeadLetterSource{Topic: "in-a", Partition: 0, Offset: 9}, DLQOffset: 1},
		{DeadLetterSource: DeadLetterSource{Topic: "in-a", Partition: 0, Offset: 5}, DLQOffset: 2}, // again, after a crash
		{DeadLetterSource: DeadLetterSource{Topic: "elsewhere", Partition: 0, Offset: 1}, DLQOffset: 3},
	} {
		if _, err := d.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	d.Seal()
	if d.Len() != 3 {
		t.Fatalf("%d distinct sources, want 3", d.Len())
	}
	tests := []struct {
		name      string
		tp        kread.TP
		offset    int64
		processed bool
		want      int64 // the dead-letter record's offset, -1 for none
	}{
		{"processed and dead-lettered", kread.TP{Topic: "in-a"}, 5, true, 0},
		{"not processed: the application did not skip it", kread.TP{Topic: "in-a"}, 9, false, -1},
		{"not dead-lettered", kread.TP{Topic: "in-a"}, 6, true, -1},
		{"another partition", kread.TP{Topic: "in-a", Partition: 1}, 5, true, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := d.Exempt(tt.tp, tt.offset, tt.processed)
			got := int64(-1)
			if ok {
				got = r.DLQOffset
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
	if n := d.Unused(); n != 2 {
		t.Errorf("%d unused dead-letter records, want 2 (in-a[0]@9 not processed, elsewhere)", n)
	}
}
