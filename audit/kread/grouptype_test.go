package kread

import (
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestDescribeGroupNotListed: a group ListGroups does not list is not
// taken as gone (a stopped application) on that answer alone: its
// coordinator may have moved after FindCoordinator, which DescribeGroups
// answers with NOT_COORDINATOR (asked again); only an empty Dead answer
// from the coordinator means the group does not exist.
func TestDescribeGroupNotListed(t *testing.T) {
	const topic = "in"
	for _, tc := range []struct {
		name        string
		group       string
		notCoord    int // DescribeGroups answers NOT_COORDINATOR this many times first
		wantExists  bool
		wantState   string
		wantVia     string
		wantDescReq int
	}{
		{name: "does not exist", group: "none", wantVia: "ListGroups, DescribeGroups v6", wantDescReq: 1},
		{name: "coordinator moved", group: "app", notCoord: 2, wantExists: true, wantState: "Empty",
			wantVia: "ListGroups, DescribeGroups v6", wantDescReq: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			admin := newProducer(t, c, nil, topic, "", kgo.MaxVersions(kversion.V3_6_0()))
			commit := kmsg.NewPtrOffsetCommitRequest()
			commit.Group, commit.Generation = "app", -1
			ct := kmsg.NewOffsetCommitRequestTopic()
			ct.Topic = topic
			cp := kmsg.NewOffsetCommitRequestTopicPartition()
			cp.Offset = 1
			ct.Partitions = append(ct.Partitions, cp)
			commit.Topics = append(commit.Topics, ct)
			if _, err := commit.RequestWith(ctxT(t), admin.cl); err != nil {
				t.Fatal(err)
			}

			// The coordinator lists no group, as one that no longer
			// holds it would.
			c.ControlKey(int16(kmsg.ListGroups), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				return kreq.ResponseKind(), nil, true
			})
			var mu sync.Mutex
			described, notCoord := 0, tc.notCoord
			c.ControlKey(int16(kmsg.DescribeGroups), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				mu.Lock()
				defer mu.Unlock()
				described++
				if notCoord == 0 {
					return nil, nil, false
				}
				notCoord--
				req := kreq.(*kmsg.DescribeGroupsRequest)
				resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
				g := kmsg.NewDescribeGroupsResponseGroup()
				g.Group, g.ErrorCode = tc.group, 16 // NOT_COORDINATOR
				resp.Groups = append(resp.Groups, g)
				return resp, nil, true
			})

			r := newReader(t, c)
			g, err := r.DescribeGroup(ctxT(t), tc.group)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if g.Exists() != tc.wantExists || g.State != tc.wantState || g.Via != tc.wantVia || described != tc.wantDescReq {
				t.Errorf("DescribeGroup(%s) = %+v after %d DescribeGroups; want exists %v, state %q, via %q after %d",
					tc.group, g, described, tc.wantExists, tc.wantState, tc.wantVia, tc.wantDescReq)
			}
			if tc.wantExists && (g.Type != GroupClassic || g.Active()) {
				t.Errorf("DescribeGroup(%s) = %+v, want a classic group without members", tc.group, g)
			}
		})
	}
}
