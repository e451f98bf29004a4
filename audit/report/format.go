package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// KeyB64Prefix marks a key rendered as base64 rather than text.
const KeyB64Prefix = "b64:"

// tsLayout is RFC 3339 in UTC with exactly three fractional digits.
const tsLayout = "2006-01-02T15:04:05.000Z"

// FormatKey renders a record key as it appears in every report: the key as
// text when it can be read back unchanged and cannot become a spreadsheet
// formula; otherwise "b64:" followed by standard base64 of the bytes. Text
// is used for valid UTF-8 that contains no carriage return, does not start
// with "b64:" or "hmac:" (the prefixes of encoded and redacted keys), and
// does not start with '=', '+', '-', '@' or a tab (a spreadsheet opening the
// CSV would take it for a formula), except a plain signed number such as
// "-42" or "+1.5", which a spreadsheet shows as a number. A nil or empty key
// renders as "".
func FormatKey(key []byte) string {
	if textKey(key) {
		return string(key)
	}
	return KeyB64Prefix + base64.StdEncoding.EncodeToString(key)
}

// textKey reports whether key is written as text (FormatKey).
func textKey(key []byte) bool {
	if !utf8.Valid(key) || bytes.IndexByte(key, '\r') >= 0 ||
		bytes.HasPrefix(key, []byte(KeyB64Prefix)) || bytes.HasPrefix(key, []byte(RedactedPrefix)) {
		return false
	}
	if len(key) == 0 {
		return true
	}
	switch key[0] {
	case '=', '@', '\t':
		return false
	case '+', '-':
		return signedNumber(key[1:])
	}
	return true
}

// signedNumber reports whether s, after a sign, is a plain decimal number:
// digits, optionally one '.' followed by digits.
func signedNumber(s []byte) bool {
	digits, dot := 0, false
	for i, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot && digits > 0 && i < len(s)-1:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// ParseKey reverses FormatKey: it returns the raw key bytes of a report's
// key field, which is what a replay tool needs.
func ParseKey(s string) ([]byte, error) {
	if b64, ok := strings.CutPrefix(s, KeyB64Prefix); ok {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("decoding key %q: %w", s, err)
		}
		return b, nil
	}
	return []byte(s), nil
}

// FormatTS renders a Unix-millisecond timestamp as RFC 3339 in UTC with
// exactly three fractional digits, e.g. "2026-11-29T10:15:02.123Z".
func FormatTS(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(tsLayout)
}

// formatTime renders a time.Time like FormatTS; the zero time renders as "".
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(tsLayout)
}

// Thousands renders n with comma thousands separators: 1234567 -> "1,234,567".
func Thousands(n int64) string {
	var buf [32]byte
	i := len(buf)
	u := uint64(n)
	if n < 0 {
		u = uint64(-n) // two's complement also handles math.MinInt64
	}
	digits := 0
	for {
		if digits > 0 && digits%3 == 0 {
			i--
			buf[i] = ','
		}
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		digits++
		if u == 0 {
			break
		}
	}
	if n < 0 {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}

// WindowSep separates a windowed aggregation's key from its window in
// every report's key field: "<key> @ <window start>/<size>".
const WindowSep = " @ "

// WindowSuffix renders the window of a windowed aggregation's row as it
// follows the key in every report: " @ " (WindowSep), the window start in
// RFC 3339 UTC (with milliseconds when it has any), "/" and the size
// (Go duration syntax without zero units: 1m, 1h30m, 1.5s), e.g.
// " @ 2026-11-29T10:05:00Z/1m". "" for nil. The key before it is rendered
// by FormatKey, so the last " @ " of the field always starts the window
// (ParseWindowedKey).
func WindowSuffix(w *finding.WindowRef) string {
	if w == nil {
		return ""
	}
	t := time.UnixMilli(w.Start).UTC()
	start := t.Format(time.RFC3339)
	if w.Start%1000 != 0 {
		start = t.Format(tsLayout)
	}
	return WindowSep + start + "/" + shortDuration(time.Duration(w.Size)*time.Millisecond)
}

// shortDuration is d's Go syntax without trailing zero units: 1m, not 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseWindowedKey reverses a windowed row's key field (FormatKey, then
// WindowSuffix): the raw key bytes, the window start in Unix milliseconds
// and the size. ok is false when the field names no window (a plain key).
func ParseWindowedKey(s string) (key []byte, start int64, size time.Duration, ok bool, err error) {
	i := strings.LastIndex(s, WindowSep)
	if i < 0 {
		return nil, 0, 0, false, nil
	}
	ts, sz, found := strings.Cut(s[i+len(WindowSep):], "/")
	if !found {
		return nil, 0, 0, false, nil
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, 0, 0, false, fmt.Errorf("window start of %q: %w", s, err)
	}
	if size, err = time.ParseDuration(sz); err != nil {
		return nil, 0, 0, false, fmt.Errorf("window size of %q: %w", s, err)
	}
	if key, err = ParseKey(s[:i]); err != nil {
		return nil, 0, 0, false, err
	}
	return key, t.UnixMilli(), size, true, nil
}
