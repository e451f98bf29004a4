package ledger

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzRead feeds the ledger reader arbitrary files: a ledger is written by
// someone else's producer and may hold anything. No input may panic; a
// failure is an *Error naming a line; every send handed out is well formed.
// The seeds (testdata/fuzz/FuzzRead) are the lines of TestRead.
//
//	go test -run '^$' -fuzz FuzzRead -fuzztime 10m -parallel 1 ./audit/compare/ledger
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"timestamp":1700000000000,"name":"startup_complete"}
{"timestamp":1700000000100,"name":"producer_send_success","key":null,"value":"0","offset":0,"topic":"t","partition":1}
{"timestamp":1700000000200,"name":"producer_send_error","exception":"class org.apache.kafka.common.errors.TimeoutException","message":"Expiring 1 record(s)","topic":"t","key":"k","value":"1"}

{"timestamp":1700000000300,"name":"shutdown_complete"}
`))
	f.Add([]byte(`{"topic":"orders","acked":true,"partition":2,"offset":17,"key":"azE=","value":"djE=","timestamp":5}
{"topic":"orders","acked":false,"key":null,"value":""}
{"topic":"orders","acked":false,"id":"order-9"}
{"topic":"orders","acked":true,"partition":0,"offset":3,"value":null}
`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var last int64
		_, err := Read(bytes.NewReader(in), func(l *Line) error {
			if l.Number <= last {
				t.Fatalf("line %d after line %d", l.Number, last)
			}
			last = l.Number
			if l.Topic == "" || l.Format != VerifiableProducer && l.Format != Native {
				t.Fatalf("line %d: topic %q format %d", l.Number, l.Topic, l.Format)
			}
			if l.Acked && (l.Partition < 0 || l.Offset < 0) {
				t.Fatalf("line %d acknowledged at [%d]@%d", l.Number, l.Partition, l.Offset)
			}
			if l.HasID && (len(l.Key) > 0 || len(l.Value) > 0) {
				t.Fatalf("line %d has an id and a key or value", l.Number)
			}
			return nil
		})
		var le *Error
		if err != nil && !errors.As(err, &le) {
			t.Fatalf("error %v is not a ledger *Error", err)
		}
	})
}
