package detect

import (
	"slices"
	"testing"
)

// TestGroupByLast: each input key's last processed record by offset per
// partition is the only one that expects its group to hold it: an update
// moving a key to another group expects only the new group; a tombstone,
// a null group key and an undecodable value expect nothing; an
// out-of-order timestamp is expected as it is (the table keeps the last
// record by offset); the same key in two partitions is two rows (two
// tasks' stores).
func TestGroupByLast(t *testing.T) {
	type rec struct {
		key string
		r   GroupRecord
	}
	v := func(p int32, off, ts int64, g string) GroupRecord {
		return GroupRecord{Partition: p, Offset: off, TS: ts, Group: []byte(g)}
	}
	type want struct {
		group string
		p     int32
		off   int64
		ts    int64
	}
	cases := []struct {
		name string
		recs []rec
		want []want
	}{
		{"one key", []rec{{"k", v(0, 1, 10, "g1")}}, []want{{"g1", 0, 1, 10}}},
		{"moved between groups", []rec{{"k", v(0, 1, 10, "g1")}, {"k", v(0, 5, 20, "g2")}}, []want{{"g2", 0, 5, 20}}},
		{"moved back", []rec{{"k", v(0, 1, 10, "g1")}, {"k", v(0, 2, 20, "g2")}, {"k", v(0, 3, 30, "g1")}}, []want{{"g1", 0, 3, 30}}},
		{"read out of offset order", []rec{{"k", v(0, 5, 20, "g2")}, {"k", v(0, 1, 10, "g1")}}, []want{{"g2", 0, 5, 20}}},
		{"out-of-order timestamp: the last by offset", []rec{{"k", v(0, 1, 50, "g1")}, {"k", v(0, 2, 10, "g2")}}, []want{{"g2", 0, 2, 10}}},
		{"tombstone", []rec{{"k", v(0, 1, 10, "g1")}, {"k", GroupRecord{Partition: 0, Offset: 2, TS: 20, Tombstone: true}}}, nil},
		{"tombstone then a value", []rec{{"k", GroupRecord{Partition: 0, Offset: 1, TS: 20, Tombstone: true}}, {"k", v(0, 2, 15, "g3")}}, []want{{"g3", 0, 2, 15}}},
		{"null group key", []rec{{"k", v(0, 1, 10, "g1")}, {"k", GroupRecord{Partition: 0, Offset: 2, TS: 20}}}, nil},
		{"undecodable last", []rec{{"k", v(0, 1, 10, "g1")}, {"k", GroupRecord{Partition: 0, Offset: 2, TS: 20, NoGroup: true}}}, nil},
		{"one key in two partitions", []rec{{"k", v(0, 1, 10, "g1")}, {"k", v(1, 1, 5, "g2")}}, []want{{"g1", 0, 1, 10}, {"g2", 1, 1, 5}}},
		{"two keys, one group", []rec{{"a", v(0, 1, 10, "g")}, {"b", v(0, 2, 5, "g")}, {"b", v(0, 3, 7, "h")}}, []want{{"g", 0, 1, 10}, {"h", 0, 3, 7}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var g GroupByLast
			for _, r := range tc.recs {
				g.Add([]byte(r.key), r.r)
			}
			var got []want
			if err := g.Each(func(group []byte, r GroupRecord) error {
				got = append(got, want{string(group), r.Partition, r.Offset, r.TS})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			cmp := func(a, b want) int {
				if a.group != b.group {
					if a.group < b.group {
						return -1
					}
					return 1
				}
				return int(a.p - b.p)
			}
			slices.SortFunc(got, cmp)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
