package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestFormatKey(t *testing.T) {
	tests := []struct {
		name string
		key  []byte
		want string
	}{
		{"ascii", []byte("cust-1"), "cust-1"},
		{"empty", []byte{}, ""},
		{"nil", nil, ""},
		{"unicode", []byte("Zürich 東京"), "Zürich 東京"},
		{"newline and comma stay text", []byte("a,b\nc"), "a,b\nc"},
		{"invalid utf8", []byte{0xff, 0x00, 0x10}, "b64:/wAQ"},
		{"looks like base64 marker", []byte("b64:abc"), "b64:YjY0OmFiYw=="},
		{"carriage return", []byte("a\r\nb"), "b64:YQ0KYg=="},
		{"avro int key bytes", []byte{0x00, 0x00, 0x00, 0x00, 0x07, 0x02}, "\x00\x00\x00\x00\x07\x02"},
		{"formula =", []byte("=HYPERLINK(\"http://x\")"), "b64:PUhZUEVSTElOSygiaHR0cDovL3giKQ=="},
		{"formula +", []byte("+1+cmd|' /C calc'!A0"), "b64:KzErY21kfCcgL0MgY2FsYychQTA="},
		{"formula -", []byte("-2+3"), "b64:LTIrMw=="},
		{"formula @", []byte("@SUM(A1)"), "b64:QFNVTShBMSk="},
		{"leading tab", []byte("\t=1"), "b64:CT0x"},
		{"leading CR", []byte("\r=1"), "b64:DT0x"},
		{"lone sign", []byte("-"), "b64:LQ=="},
		{"negative number stays text", []byte("-42"), "-42"},
		{"signed decimal stays text", []byte("+1.5"), "+1.5"},
		{"sign then dot", []byte("-.5"), "b64:LS41"},
		{"trailing dot", []byte("-5."), "b64:LTUu"},
		{"formula char inside stays text", []byte("a=b+c-d@e"), "a=b+c-d@e"},
		{"looks redacted", []byte("hmac:00"), "b64:aG1hYzowMA=="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FormatKey(tt.key)
			if got != tt.want {
				t.Fatalf("FormatKey(%q) = %q, want %q", tt.key, got, tt.want)
			}
			back, err := ParseKey(got)
			if err != nil {
				t.Fatalf("ParseKey(%q): %v", got, err)
			}
			if !bytes.Equal(back, tt.key) {
				t.Fatalf("ParseKey(FormatKey(%q)) = %q", tt.key, back)
			}
		})
	}
}

func TestParseKeyRejectsBadBase64(t *testing.T) {
	if _, err := ParseKey("b64:!!!"); err == nil || !strings.Contains(err.Error(), "b64:!!!") {
		t.Fatalf("ParseKey(bad) error = %v, want one naming the field", err)
	}
}

func FuzzKeyRoundTrip(f *testing.F) {
	for _, seed := range [][]byte{nil, []byte("x"), {0xff}, []byte("b64:"), []byte("\r"), []byte("é")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		back, err := ParseKey(FormatKey(key))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, key) && !(len(key) == 0 && len(back) == 0) {
			t.Fatalf("round trip of %q gave %q", key, back)
		}
	})
}

func TestFormatTS(t *testing.T) {
	tests := []struct {
		ms   int64
		want string
	}{
		{time.Date(2026, 11, 29, 10, 15, 2, 123e6, time.UTC).UnixMilli(), "2026-11-29T10:15:02.123Z"},
		{time.Date(2026, 11, 29, 10, 15, 2, 0, time.UTC).UnixMilli(), "2026-11-29T10:15:02.000Z"},
		{time.Date(2026, 11, 29, 10, 15, 2, 50e6, time.FixedZone("CET", 3600)).UnixMilli(), "2026-11-29T09:15:02.050Z"},
		{0, "1970-01-01T00:00:00.000Z"},
		{-1, "1969-12-31T23:59:59.999Z"},
	}
	for _, tt := range tests {
		if got := FormatTS(tt.ms); got != tt.want {
			t.Errorf("FormatTS(%d) = %q, want %q", tt.ms, got, tt.want)
		}
		if back, err := time.Parse(time.RFC3339Nano, FormatTS(tt.ms)); err != nil || back.UnixMilli() != tt.ms {
			t.Errorf("FormatTS(%d) does not parse back as RFC 3339: %v %v", tt.ms, back, err)
		}
	}
}

func TestThousands(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {1234567, "1,234,567"},
		{-1234567, "-1,234,567"}, {-999, "-999"},
		{math.MaxInt64, "9,223,372,036,854,775,807"}, {math.MinInt64, "-9,223,372,036,854,775,808"},
	}
	for _, tt := range tests {
		if got := Thousands(tt.n); got != tt.want {
			t.Errorf("Thousands(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestSafe(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain Zürich", "plain Zürich"},
		{"\x1b[2Jboom", `\x1b[2Jboom`},
		{"a\nb\tc\r", `a\nb\tc\r`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"\u009b31m", `\u009b31m`},
	}
	for _, tt := range tests {
		if got := safe(tt.in); got != tt.want {
			t.Errorf("safe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWindowSuffix(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC).UnixMilli()
	cases := []struct {
		key  string
		w    *finding.WindowRef
		want string
	}{
		{"k1", nil, "k1"},
		{"k1", &finding.WindowRef{Start: start, Size: 60_000}, "k1 @ 2026-11-29T10:05:00Z/1m"},
		{"a @ b", &finding.WindowRef{Start: start, Size: 3_600_000}, "a @ b @ 2026-11-29T10:05:00Z/1h"},
		{"k", &finding.WindowRef{Start: start + 500, Size: 1_500}, "k @ 2026-11-29T10:05:00.500Z/1.5s"},
		{"\xff", &finding.WindowRef{Start: start, Size: 90_000}, "b64:/w== @ 2026-11-29T10:05:00Z/1m30s"},
	}
	for _, tc := range cases {
		got := FormatKey([]byte(tc.key)) + WindowSuffix(tc.w)
		if got != tc.want {
			t.Errorf("%q %+v = %q, want %q", tc.key, tc.w, got, tc.want)
			continue
		}
		key, st, size, ok, err := ParseWindowedKey(got)
		if err != nil || ok != (tc.w != nil) {
			t.Errorf("ParseWindowedKey(%q) = ok %v, err %v", got, ok, err)
			continue
		}
		if ok && (string(key) != tc.key || st != tc.w.Start || size != time.Duration(tc.w.Size)*time.Millisecond) {
			t.Errorf("ParseWindowedKey(%q) = %q, %d, %s", got, key, st, size)
		}
	}
}
