package ledger

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func render(l *Line) string {
	q := func(b []byte) string {
		if b == nil {
			return "null"
		}
		return fmt.Sprintf("%q", b)
	}
	s := fmt.Sprintf("%d %s acked=%v", l.Number, l.Topic, l.Acked)
	if l.Acked {
		s += fmt.Sprintf(" [%d]@%d", l.Partition, l.Offset)
	}
	if l.HasID {
		return s + fmt.Sprintf(" id=%q ts=%d", l.ID, l.TS)
	}
	return s + fmt.Sprintf(" key=%s value=%s ts=%d", q(l.Key), q(l.Value), l.TS)
}

func TestRead(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		skipped int64
		err     string
	}{
		{
			name: "VerifiableProducer: sends kept, other events skipped",
			in: `{"timestamp":1700000000000,"name":"startup_complete"}
{"timestamp":1700000000100,"name":"producer_send_success","key":null,"value":"0","offset":0,"topic":"t","partition":1}
{"timestamp":1700000000200,"name":"producer_send_error","exception":"class org.apache.kafka.common.errors.TimeoutException","message":"Expiring 1 record(s)","topic":"t","key":"k","value":"1"}

{"timestamp":1700000000300,"name":"shutdown_complete"}
{"timestamp":1700000000300,"name":"tool_data","sent":2,"acked":1,"target_throughput":-1,"avg_throughput":5.0}
`,
			want:    []string{`2 t acked=true [1]@0 key=null value="0" ts=1700000000100`, `3 t acked=false key="k" value="1" ts=1700000000200`},
			skipped: 4,
		},
		{
			name: "native: base64 key and value, null and empty distinct, ids",
			in: `{"topic":"orders","acked":true,"partition":2,"offset":17,"key":"azE=","value":"djE=","timestamp":5}
{"topic":"orders","acked":false,"key":null,"value":""}
{"topic":"orders","acked":false,"id":"order-9"}
{"topic":"orders","acked":true,"partition":0,"offset":3,"value":null}
`,
			want: []string{
				`1 orders acked=true [2]@17 key="k1" value="v1" ts=5`,
				`2 orders acked=false key=null value="" ts=0`,
				`3 orders acked=false id="order-9" ts=0`,
				`4 orders acked=true [0]@3 key=null value=null ts=0`,
			},
		},
		{name: "not JSON", in: "hello\n", err: "line 1: not a JSON object"},
		{name: "neither format", in: `{"topic":"t"}`, err: `line 1: is neither a VerifiableProducer line`},
		{name: "acked without offset", in: `{"topic":"t","acked":true,"partition":0}`, err: "line 1: acknowledged without a partition and an offset"},
		{name: "no topic", in: `{"name":"producer_send_error","key":null,"value":"x"}`, err: "line 1: has no topic"},
		{name: "bad base64", in: `{"topic":"t","acked":false,"value":"%%%"}`, err: "line 1: value: is not standard base64"},
		{name: "id and value", in: `{"topic":"t","acked":false,"id":"a","value":"eA=="}`, err: "line 1: has both an id and a key or value"},
		{name: "non-string VerifiableProducer value", in: `{"name":"producer_send_error","topic":"t","value":7}`, err: "line 1: value: must be a string or null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			skipped, err := Read(strings.NewReader(tt.in), func(l *Line) error {
				got = append(got, render(l))
				return nil
			})
			if tt.err != "" {
				var le *Error
				if err == nil || !errors.As(err, &le) || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("error %v, want a ledger error starting with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if skipped != tt.skipped {
				t.Errorf("skipped %d, want %d", skipped, tt.skipped)
			}
		})
	}
}

func TestReadRejectsOverlongLines(t *testing.T) {
	in := `{"topic":"t","acked":false,"value":"` + strings.Repeat("A", MaxLineBytes) + `"}`
	_, err := Read(strings.NewReader(in), func(*Line) error { return nil })
	var le *Error
	if !errors.As(err, &le) || le.Line != 1 {
		t.Fatalf("error %v, want one naming line 1", err)
	}
}
