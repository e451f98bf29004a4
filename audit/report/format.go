package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// KeyB64Prefix marks a key rendered as base64 rather than text.
const KeyB64Prefix = "b64:"

// tsLayout is RFC 3339 in UTC with exactly three fractional digits.
const tsLayout = "2006-01-02T15:04:05.000Z"

// FormatKey renders a record key as it appears in every report: the key as
// text when it is valid UTF-8, does not start with "b64:" and contains no
// carriage return; otherwise "b64:" followed by standard base64 of the bytes.
// A nil or empty key renders as "".
func FormatKey(key []byte) string {
	if utf8.Valid(key) && !bytes.HasPrefix(key, []byte(KeyB64Prefix)) && bytes.IndexByte(key, '\r') < 0 {
		return string(key)
	}
	return KeyB64Prefix + base64.StdEncoding.EncodeToString(key)
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
