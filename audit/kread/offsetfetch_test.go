package kread

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestGroupOffsetsAskStable checks what GroupOffsets asks the coordinator
// and how it treats UNSTABLE_OFFSET_COMMIT: OffsetFetch v7 with
// require_stable where the broker has it (asked again until the answer is
// stable, for at most StableWait), OffsetFetch v5 after the
// __consumer_offsets wait where it does not (Kafka before 2.5).
func TestGroupOffsetsAskStable(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxFetch    int16 // the broker's highest OffsetFetch version
		unstableFor int   // answers UNSTABLE_OFFSET_COMMIT to this many v7 requests first
		wantVersion int16 // of the last OffsetFetch
		wantErr     bool  // ErrUnstableOffsets after StableWait
	}{
		{name: "stable at once", maxFetch: 9, wantVersion: 7},
		{name: "unstable, then stable", maxFetch: 9, unstableFor: 3, wantVersion: 7},
		{name: "unstable for longer than the wait", maxFetch: 9, unstableFor: 1 << 30, wantVersion: 7, wantErr: true},
		{name: "broker before 2.5", maxFetch: 5, wantVersion: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const topic, group = "in", "app"
			v := kversion.Stable()
			v.SetMaxKeyVersion(int16(kmsg.OffsetFetch), tc.maxFetch)
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic), kfake.MaxVersions(v))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			admin := newProducer(t, c, nil, topic, "", kgo.MaxVersions(kversion.V3_6_0()))
			commit := kmsg.NewPtrOffsetCommitRequest()
			commit.Group, commit.Generation = group, -1
			ct := kmsg.NewOffsetCommitRequestTopic()
			ct.Topic = topic
			cp := kmsg.NewOffsetCommitRequestTopicPartition()
			cp.Partition, cp.Offset = 1, 42
			ct.Partitions = append(ct.Partitions, cp)
			commit.Topics = append(commit.Topics, ct)
			if _, err := commit.RequestWith(ctxT(t), admin.cl); err != nil {
				t.Fatal(err)
			}

			var mu sync.Mutex
			var versions []int16
			var stableFlags []bool
			unstable := tc.unstableFor
			c.ControlKey(int16(kmsg.OffsetFetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				req := kreq.(*kmsg.OffsetFetchRequest)
				mu.Lock()
				defer mu.Unlock()
				versions = append(versions, req.Version)
				stableFlags = append(stableFlags, req.RequireStable)
				if req.Version < 7 || unstable == 0 {
					return nil, nil, false
				}
				unstable--
				resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
				for _, rt := range req.Topics {
					t := kmsg.NewOffsetFetchResponseTopic()
					t.Topic = rt.Topic
					for _, p := range rt.Partitions {
						pp := kmsg.NewOffsetFetchResponseTopicPartition()
						pp.Partition, pp.Offset, pp.ErrorCode = p, -1, 88 // UNSTABLE_OFFSET_COMMIT
						t.Partitions = append(t.Partitions, pp)
					}
					resp.Topics = append(resp.Topics, t)
				}
				return resp, nil, true
			})

			r := newReader(t, c, func(o *Options) { o.StableWait = time.Second })
			start := time.Now()
			got, err := r.GroupOffsets(ctxT(t), group, []string{topic})
			mu.Lock()
			defer mu.Unlock()
			if len(versions) == 0 || versions[len(versions)-1] != tc.wantVersion {
				t.Fatalf("OffsetFetch versions sent: %v, want the last to be v%d", versions, tc.wantVersion)
			}
			for i, v := range versions {
				if v >= 7 && !stableFlags[i] {
					t.Errorf("OffsetFetch v%d without require_stable", v)
				}
			}
			if tc.wantErr {
				if !errors.Is(err, ErrUnstableOffsets) || !strings.Contains(err.Error(), group) {
					t.Fatalf("err = %v, want ErrUnstableOffsets naming %s", err, group)
				}
				if waited := time.Since(start); waited < time.Second {
					t.Errorf("gave up after %s, before the 1s wait", waited)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[TP{topic, 1}] != 42 {
				t.Errorf("offsets %v, want in[1]=42 only", got)
			}
			if want := tc.unstableFor + 1; tc.maxFetch >= 7 && len(versions) != want {
				t.Errorf("%d OffsetFetch requests, want %d (one per unstable answer, then the stable one)", len(versions), want)
			}
		})
	}
}
