package streams

import "testing"

// The expected hashes are the cases of Kafka's own murmur2 unit test
// (clients UtilsTest.testMurmur2), as Java ints.
func TestMurmur2MatchesKafka(t *testing.T) {
	tests := []struct {
		key  string
		hash int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	}
	for _, tt := range tests {
		if got := int32(murmur2([]byte(tt.key))); got != tt.hash {
			t.Errorf("murmur2(%q) = %d, want %d", tt.key, got, tt.hash)
		}
	}
}

func TestPartitionForIsPositiveModulo(t *testing.T) {
	// toPositive(-973932308) = -973932308 & 0x7fffffff = 1173551340.
	if got := partitionFor([]byte("21"), 7); got != 1173551340%7 {
		t.Errorf("partitionFor(21, 7) = %d, want %d", got, 1173551340%7)
	}
	if got := partitionFor([]byte("x"), 0); got != 0 {
		t.Errorf("partitionFor with no partitions = %d, want 0", got)
	}
}
