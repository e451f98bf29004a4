package engine

import (
	"strings"
	"testing"
)

func TestKeyRefHidesTheKey(t *testing.T) {
	for _, key := range []string{"customer-4711", "", "=cmd|' /C calc'!A0", "\x1b[31mred"} {
		ref := KeyRef([]byte(key))
		if key != "" && strings.Contains(ref, key) {
			t.Errorf("KeyRef(%q) = %q shows the key", key, ref)
		}
		if ref != KeyRef([]byte(key)) || !strings.HasPrefix(ref, "sha256:") {
			t.Errorf("KeyRef(%q) = %q, want a stable sha256: reference", key, ref)
		}
	}
	if KeyRef([]byte("a")) == KeyRef([]byte("b")) {
		t.Error("two keys share a reference")
	}
}
