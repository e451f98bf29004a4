package streams

import (
	"reflect"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
)

func TestKnownEncodingRoundTrips(t *testing.T) {
	ins := []Input{{Name: "a", Topic: "inA", RepartitionTopic: "repA", Table: true}, {Name: "b", Topic: "inB", RepartitionTopic: "repB", ChangelogTopic: "clB", BufferTopic: "bufB"}}
	full := known{
		inputs: []knownInput{
			{has: true, ev: detect.InputRecord{TS: 1795946400123, Partition: 3, Offset: 1 << 40, FP: 0xfeedfacecafebeef},
				copied: true, copyPartition: 1, copyOffset: 77, hasProcessed: true, processed: 1 << 35,
				pending: []detect.InputRecord{{TS: -5, Partition: 0, Offset: 0, FP: 1}, {TS: 9, Partition: 2, Offset: 12, FP: 2}}},
			{},
		},
		changelogs: []detect.StageState{{Has: true, TS: 10, Offset: 4, Partition: 2, HasCount: true, Count: 41}, {HasAborted: true, AbortedTS: 99, Partition: 1}},
		output:     detect.StageState{Has: true, TS: 11, Offset: 5, HasAborted: true, AbortedTS: 12},
		buffers:    []detect.BufferState{{}, {Has: true, Partition: 1, Offset: 1 << 33, Tombstone: true}},
		tables:     [][]detect.TableRecord{{{Partition: 0, Offset: 1 << 41, TS: -7}, {Partition: 2, Offset: 3, TS: 1795946400123, Tombstone: true}}, nil},
		open: []openFinding{
			{x: 0, firstSeen: 1795946401000, row: finding.Row{Kind: finding.Stale, Stage: finding.StageChangelog, Input: "a", Topic: "inA",
				Partition: 3, Offset: 1 << 40, Timestamp: 100, ExpectedTS: 100, HasObserved: true, ObservedTS: 90,
				Evidence: &finding.Witness{Topic: "repA", Seen: true, Partition: 1, Offset: 77}}},
			{x: 1, firstSeen: 5, withheld: true, looked: true, hasBefore: true, beforeTS: -3,
				row: finding.Row{Kind: finding.Aborted, Stage: finding.StageOutput, Input: "b", Topic: "inB", Timestamp: 7, ExpectedTS: 7}},
			{x: 0, row: finding.Row{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "a", Topic: "inA", Evidence: &finding.Witness{Topic: "repA"}}},
			{x: 1, firstSeen: 9, row: finding.Row{Kind: finding.Undercount, Stage: finding.StageCount, Input: "b", Topic: "inB", Partition: 1, Offset: 3,
				Timestamp: 8, ExpectedTS: 8, HasObserved: true, ObservedTS: 8,
				Evidence: &finding.CountEvidence{Changelog: "clB", Partition: 1, Offset: 99, Count: 40, Processed: 42}}},
		},
	}
	empty := known{inputs: make([]knownInput, 2), changelogs: make([]detect.StageState, 2), buffers: make([]detect.BufferState, 2)}
	for name, k := range map[string]known{"full": full, "empty": empty} {
		t.Run(name, func(t *testing.T) {
			b := k.encode(nil, ins)
			var got known
			if err := got.decode(b, ins); err != nil {
				t.Fatal(err)
			}
			norm := func(k *known) {
				for i := range k.inputs {
					if len(k.inputs[i].pending) == 0 {
						k.inputs[i].pending = nil
					}
				}
				if len(k.open) == 0 {
					k.open = nil
				}
				some := false
				for i := range k.tables {
					if len(k.tables[i]) == 0 {
						k.tables[i] = nil
					}
					some = some || k.tables[i] != nil
				}
				if !some {
					k.tables = nil
				}
			}
			norm(&got)
			norm(&k)
			if !reflect.DeepEqual(got, k) {
				t.Errorf("decoded\n%+v\nwant\n%+v", got, k)
			}
			for cut := range len(b) {
				if err := got.decode(b[:cut], ins); err == nil {
					t.Fatalf("decoding the first %d of %d bytes succeeded", cut, len(b))
				}
			}
			if err := got.decode(b, ins[:1]); err == nil {
				t.Error("a value of 2 inputs decoded for a 1-input pipeline")
			}
		})
	}
	// A pipeline without a buffer or a table source encodes no buffer or
	// table state: its states read as they did before these were kept.
	noBuf := []Input{{Name: "a", Topic: "inA", RepartitionTopic: "repA"}, {Name: "b", Topic: "inB", RepartitionTopic: "repB"}}
	k := full
	k.buffers, k.tables = nil, nil
	withBuf, without := full.encode(nil, ins), k.encode(nil, noBuf)
	if len(withBuf) <= len(without) || string(withBuf[:len(without)]) != string(without) {
		t.Errorf("the buffer and table states are not a suffix: %x vs %x", withBuf, without)
	}
}
