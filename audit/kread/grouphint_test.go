package kread

import (
	"errors"
	"fmt"
	"testing"

	kafka "github.com/segmentio/kafka-go"
)

// TestGroupHint: a refused group request names the permission it needs;
// other errors get no hint.
func TestGroupHint(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{kafka.GroupAuthorizationFailed, " (the principal needs DESCRIBE on the group; docs/security.md)"},
		{fmt.Errorf("wrapped: %w", kafka.GroupAuthorizationFailed), " (the principal needs DESCRIBE on the group; docs/security.md)"},
		{kafka.TopicAuthorizationFailed, ""},
		{errors.New("connection refused"), ""},
	} {
		if got := groupHint(tc.err); got != tc.want {
			t.Errorf("groupHint(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
