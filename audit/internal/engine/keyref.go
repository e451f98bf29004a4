package engine

import (
	"crypto/sha256"
	"fmt"
)

// KeyRef names a record key in an error without its bytes: errors go to
// logs and to watch's /healthz, where report.redact_keys does not reach,
// and a key is customer data. The same key always gives the same
// reference.
func KeyRef(key []byte) string {
	sum := sha256.Sum256(key)
	return fmt.Sprintf("sha256:%x (%d bytes)", sum[:8], len(key))
}
