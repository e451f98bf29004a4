package kread

import (
	"errors"
	"fmt"
	"testing"

	kafka "github.com/segmentio/kafka-go"
)

// TestHints: a refused group request or fetch names the permission it
// needs; other errors get no hint.
func TestHints(t *testing.T) {
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
	for _, tc := range []struct {
		err  error
		want string
	}{
		{kafka.TopicAuthorizationFailed, " (the principal needs READ on the topic; docs/security.md)"},
		{kafka.GroupAuthorizationFailed, ""},
		{kafka.OffsetOutOfRange, ""},
	} {
		if got := readHint(tc.err); got != tc.want {
			t.Errorf("readHint(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
