package streamsmeta

import (
	"errors"
	"maps"
	"testing"
)

// The encodings are what TopicPartitionMetadata#encode printed in the
// kafka-streams 3.6.2 and 4.4.0 jars (the same bytes in both) for a
// partition time of 1764671400000 (or -1) and the processor metadata
// shown; version 1 is the pre-3.3 format, base64 of 0x01 and the time.
func TestDecodeOffsetMetaRealEncodings(t *testing.T) {
	const store = "KSTREAM-AGGREGATE-STATE-STORE-0000000003"
	tests := []struct {
		name string
		in   string
		want OffsetMeta
	}{
		{"empty string", "", OffsetMeta{Version: 0, PartitionTime: -1}},
		{"version 1", "AQAAAZrenKhA", OffsetMeta{Version: 1, PartitionTime: 1764671400000}},
		{"version 2, no processor metadata", "AgAAAZrenKhA", OffsetMeta{Version: 2, PartitionTime: 1764671400000}},
		{"version 2, unknown partition time", "Av//////////", OffsetMeta{Version: 2, PartitionTime: -1}},
		{"version 2, one store", "AgAAAZrenKhAAAAAAQAAAChLU1RSRUFNLUFHR1JFR0FURS1TVEFURS1TVE9SRS0wMDAwMDAwMDAzAAABmt6bveA=",
			OffsetMeta{Version: 2, PartitionTime: 1764671400000, Processor: map[string]int64{store: 1764671340000}}},
		{"version 2, two stores, one never emitted", "Av//////////AAAAAgAAAChLU1RSRUFNLUFHR1JFR0FURS1TVEFURS1TVE9SRS0wMDAwMDAwMDAzAAABmt6bveAAAAAMY291bnRzLXN0b3Jl//////////8=",
			OffsetMeta{Version: 2, PartitionTime: -1, Processor: map[string]int64{store: 1764671340000, "counts-store": -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeOffsetMeta(tt.in)
			if err != nil {
				t.Fatalf("DecodeOffsetMeta: %v", err)
			}
			if got.Version != tt.want.Version || got.PartitionTime != tt.want.PartitionTime || !maps.Equal(got.Processor, tt.want.Processor) {
				t.Errorf("DecodeOffsetMeta = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeOffsetMetaRefusesWhatItCannotRead(t *testing.T) {
	tests := []struct {
		name, in string
	}{
		{"not base64", "not base64!"},
		{"too short", "AgAA"},
		{"version 3", "AwAAAZrenKhA"},
		{"version 1 with trailing bytes", "AQAAAZrenKhAAA=="},
		{"truncated entry count", "AgAAAZrenKhAAAA="},
		{"negative entry count", "AgAAAZrenKhA/////w=="},
		{"truncated entry", "AgAAAZrenKhAAAAAAQAAAAVzdG9yZQAA"},
		{"missing entry", "AgAAAZrenKhAAAAAAgAAAAFzAAAAAAAAAAE="},
		{"trailing bytes", "AgAAAZrenKhAAAAAAQAAAAFzAAAAAAAAAAEA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeOffsetMeta(tt.in)
			if !errors.Is(err, errOffsetMeta) {
				t.Errorf("DecodeOffsetMeta(%q) = %+v, %v; want an error", tt.in, got, err)
			}
		})
	}
}
