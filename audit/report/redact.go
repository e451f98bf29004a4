package report

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// RedactedPrefix starts a redacted key: "hmac:" and 32 hex digits, the
// first 128 bits of HMAC-SHA256 of the raw key bytes under the user's
// secret (report.redact_keys). The same key under the same secret always
// gives the same text, so two redacted reports can be compared; without
// the secret the key cannot be recovered or confirmed.
const RedactedPrefix = "hmac:"

// redactedBytes is how many bytes of the HMAC a redacted key keeps.
const redactedBytes = 16

// RedactKeys returns a copy of res whose rows (and resolved rows) carry a
// keyed hash of their key instead of the key, marked so that every report
// renders it as RedactedPrefix and hex (Summary.KeysRedacted). res itself
// is left as it is.
func RedactKeys(res *finding.Result, secret []byte) *finding.Result {
	if res == nil {
		return nil
	}
	out := *res
	out.Summary.KeysRedacted = true
	mac := hmac.New(sha256.New, secret)
	redact := func(rows []finding.Row) []finding.Row {
		rows = slices.Clone(rows)
		for i := range rows {
			mac.Reset()
			mac.Write(rows[i].Key)
			rows[i].Key = mac.Sum(nil)[:redactedBytes]
		}
		return rows
	}
	out.Rows, out.Resolved = redact(res.Rows), redact(res.Resolved)
	return &out
}

// keyText renders the key of a row: FormatKey, or for a redacted result
// (Summary.KeysRedacted) RedactedPrefix and the hash in hex.
func keyText(redacted bool, key []byte) string {
	if redacted {
		return RedactedPrefix + hex.EncodeToString(key)
	}
	return FormatKey(key)
}
