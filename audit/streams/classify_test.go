package streams

import "testing"

func TestClassify(t *testing.T) {
	w := window{from: 100, to: 200}
	tests := []struct {
		name      string
		processed bool
		hasValue  bool
		ts        int64
		status    SelectStatus
		want      class
	}{
		{"processed, in the window, selected", true, true, 150, Selected, candidate},
		{"window bounds are inclusive", true, true, 100, Selected, candidate},
		{"window bounds are inclusive (to)", true, true, 200, Selected, candidate},
		{"before the window", true, true, 99, Selected, outsideWindow},
		{"after the window", true, true, 201, Selected, outsideWindow},
		{"outside the window wins over pending", false, true, 50, Selected, outsideWindow},
		{"not processed yet", false, true, 150, Selected, pending},
		{"pending wins over a null value", false, false, 150, DecodeError, pending},
		{"pending wins over a decode error (the app may decode it)", false, true, 150, DecodeError, pending},
		{"null value", true, false, 150, DecodeError, nullValue},
		{"decode error", true, true, 150, DecodeError, undecodable},
		{"null selected key", true, true, 150, NullKey, nullKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.processed, tt.hasValue, tt.ts, tt.status, w); got != tt.want {
				t.Errorf("classify = %d, want %d", got, tt.want)
			}
		})
	}
	if got := classify(true, true, -5, Selected, window{}); got != candidate {
		t.Errorf("no window: classify = %d, want candidate", got)
	}
}
