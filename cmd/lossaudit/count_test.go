package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// countTopology is describe() of a count by a new key (selectKey ->
// groupByKey -> count -> toStream -> mapValues -> to), as
// testbed/topodescribe prints it with kafka-streams 4.4.0.
const countTopology = "../../audit/streams/topology/testdata/unsupported-count-4.4.0.txt"

const countStore = "KSTREAM-AGGREGATE-STATE-STORE-0000000002"

// countApp plays the count application on a cluster: every input record
// is copied to the repartition topic and counted, unless its update is
// lost (the count is not incremented and nothing is written); offsets are
// committed past everything at both hops.
func countApp(t *testing.T, brokers []string, keys, perKey int, lose map[int]bool) {
	t.Helper()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rep, chl := "app-"+countStore+"-repartition", "app-"+countStore+"-changelog"
	createTopics(t, cl, chl, "topicA", rep, chl, "joined")
	counts := map[string]int64{}
	var recs []*kgo.Record
	base := time.UnixMilli(1_700_000_000_000)
	for i := range keys * perKey {
		key := fmt.Sprintf("k%d", i%keys)
		p := int32(i % keys % 2)
		ts := base.Add(time.Duration(i) * time.Second)
		v := []byte("v" + fmt.Sprint(i))
		recs = append(recs, &kgo.Record{Topic: "topicA", Partition: int32(i % 2), Key: []byte(key), Value: v, Timestamp: ts},
			&kgo.Record{Topic: rep, Partition: p, Key: []byte(key), Value: v, Timestamp: ts})
		if lose[i] {
			continue
		}
		counts[key]++
		n := binary.BigEndian.AppendUint64(nil, uint64(counts[key]))
		recs = append(recs, &kgo.Record{Topic: chl, Partition: p, Key: []byte(key), Value: n, Timestamp: ts},
			&kgo.Record{Topic: "joined", Partition: p, Key: []byte(key), Value: []byte(fmt.Sprint(counts[key])), Timestamp: ts})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Commit past every record at both hops (the records of a partition
	// are consecutive, so the end is one past the last).
	ends := map[string]map[int32]int64{}
	for _, r := range recs {
		if r.Topic == "topicA" || r.Topic == rep {
			if ends[r.Topic] == nil {
				ends[r.Topic] = map[int32]int64{}
			}
			ends[r.Topic][r.Partition] = max(ends[r.Topic][r.Partition], r.Offset+1)
		}
	}
	commitGroup(t, cl, "app", ends)
}

// readCSVFile reads the CSV file at path whole.
func readCSVFile(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// createTopics creates topics of 2 partitions; compacted is the one whose
// cleanup.policy is compact ("" for none).
func createTopics(t *testing.T, cl *kgo.Client, compacted string, topics ...string) {
	t.Helper()
	create := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range topics {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 2, 1
		if name == compacted {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = "cleanup.policy", kmsg.StringPtr("compact")
			ct.Configs = append(ct.Configs, c)
		}
		create.Topics = append(create.Topics, ct)
	}
	resp, err := create.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range resp.Topics {
		if err := kerr.ErrorForCode(ct.ErrorCode); err != nil {
			t.Fatalf("creating %s: %v", ct.Topic, err)
		}
	}
}

// commitGroup commits group's offsets ends (per topic, per partition).
func commitGroup(t *testing.T, cl *kgo.Client, group string, ends map[string]map[int32]int64) {
	t.Helper()
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = group, -1
	for topic, parts := range ends {
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = topic
		for p, off := range parts {
			cp := kmsg.NewOffsetCommitRequestTopicPartition()
			cp.Partition, cp.Offset, cp.LeaderEpoch = p, off, -1
			ct.Partitions = append(ct.Partitions, cp)
		}
		commit.Topics = append(commit.Topics, ct)
	}
	cr, err := commit.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range cr.Topics {
		for _, cp := range ct.Partitions {
			if err := kerr.ErrorForCode(cp.ErrorCode); err != nil {
				t.Fatalf("committing %s[%d]: %v", ct.Topic, cp.Partition, err)
			}
		}
	}
}

// TestAuditCount audits a count by a new key declared in pipeline.nodes:
// a clean run finds nothing; updates lost from the count are reported as
// undercounts naming exactly the keys and the number of lost updates,
// which the newest-timestamp rule alone cannot see (each key's last
// update arrived).
func TestAuditCount(t *testing.T) {
	clearEnv(t)
	cases := []struct {
		name string
		lose map[int]bool // record indexes; key k(i%3)
		code int
		want []string // key and detail tail of each CSV row
	}{
		{name: "clean", code: exitOK},
		{name: "two updates of k1, one of k2 lost", lose: map[int]bool{1: true, 4: true, 5: true}, code: exitFindings,
			want: []string{"k1 counts 3, but 5 records of the key were processed: 2 updates lost", "k2 counts 4, but 5 records of the key were processed: 1 update lost"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
			if err != nil {
				t.Fatal(err)
			}
			defer cluster.Close()
			countApp(t, cluster.ListenAddrs(), 3, 5, tc.lose)
			dir := t.TempDir()
			topo, err := filepath.Abs(countTopology)
			if err != nil {
				t.Fatal(err)
			}
			yaml := fmt.Sprintf(`kafka:
  brokers: [%s]
pipeline:
  application_id: app
  topology_file: %q
  nodes:
    - {name: KSTREAM-AGGREGATE-0000000003, kind: count}
  inputs:
    - {name: a, topic: topicA, key_format: string}
store:
  dir: %q
report:
  csv: %q
  json: %q
  html: %q
`, strings.Join(cluster.ListenAddrs(), ", "), topo, filepath.Join(dir, "store"), filepath.Join(dir, "loss.csv"), filepath.Join(dir, "report.json"), filepath.Join(dir, "report.html"))
			cfg := filepath.Join(dir, "audit.yaml")
			if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := testRun([]string{"audit", "-q", "-c", cfg}, &stdout, &stderr); code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout.String(), stderr.String())
			}
			recs := readCSVFile(t, filepath.Join(dir, "loss.csv"))
			var got []string
			for _, r := range recs[1:] {
				if r[0] != "undercount" || r[1] != "count" {
					t.Errorf("row %q: want only undercounts at the count stage", r)
				}
				d := r[10]
				got = append(got, r[3]+" "+d[strings.Index(d, " counts ")+1:])
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("rows %q, want %q\n%s", got, tc.want, stdout.String())
			}
			// The JSON report counts the count stage; the HTML report names
			// the rows and the recounted store.
			js, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Stages []struct {
					Stage       string           `json:"stage"`
					KeysChecked int64            `json:"keys_checked"`
					Findings    map[string]int64 `json:"findings"`
				} `json:"stages"`
			}
			if err := json.Unmarshal(js, &rep); err != nil {
				t.Fatal(err)
			}
			counted := false
			for _, st := range rep.Stages {
				if st.Stage == "count" {
					counted = st.KeysChecked == 3 && st.Findings["undercount"] == int64(len(tc.want))
				}
			}
			if !counted {
				t.Errorf("JSON stages %+v: want the count stage with 3 keys and %d undercounts", rep.Stages, len(tc.want))
			}
			html, err := os.ReadFile(filepath.Join(dir, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(html), "count store, changelog (recounted)") || (len(tc.want) > 0 && !strings.Contains(string(html), "updates lost")) {
				t.Errorf("the HTML report does not show the recounted store or the undercounts")
			}
		})
	}
}
