// Package loadgen produces the three Avro inputs of the testbed pipeline
// (Confluent wire format, schemas registered in the _schemas topic) with
// unique, checkable values, and keeps a ledger of exactly what the brokers
// acknowledged.
package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Input value schemas, byte-identical to the canonical text Avro's Java
// Schema#toString prints for testbed/streamsapp's Schemas.java, so the
// application and the generator agree on the registered ids.
const (
	SchemaA = `{"type":"record","name":"OrderA","namespace":"lossaudit.testbed","fields":[{"name":"customerId","type":"string"},{"name":"seq","type":"long"},{"name":"ts","type":"long"},{"name":"amount","type":"double"},{"name":"note","type":["null","string"],"default":null}]}`
	SchemaB = `{"type":"record","name":"ProfileB","namespace":"lossaudit.testbed","fields":[{"name":"customerId","type":"string"},{"name":"seq","type":"long"},{"name":"ts","type":"long"},{"name":"address","type":{"type":"record","name":"Address","fields":[{"name":"city","type":"string"},{"name":"zip","type":"string"}]}}]}`
	SchemaC = `{"type":"record","name":"PaymentC","namespace":"lossaudit.testbed","fields":[{"name":"customerId","type":"string"},{"name":"seq","type":"long"},{"name":"ts","type":"long"},{"name":"status","type":"string"},{"name":"meta","type":["null",{"type":"record","name":"Meta","fields":[{"name":"source","type":"string"}]}],"default":null}]}`
)

// SchemaEntry is one registered (subject, version) in the _schemas topic.
type SchemaEntry struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      int    `json:"id"`
	Schema  string `json:"schema"`
	Deleted bool   `json:"deleted"`
}

type schemaKey struct {
	KeyType string `json:"keytype"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
	Magic   int    `json:"magic"`
}

// ReadSchemas reads every SCHEMA record of the registry storage topic
// (partition 0, from the start to the high watermark), later records winning;
// opts add to or override the client's options.
func ReadSchemas(ctx context.Context, brokers []string, topic string, opts ...kgo.Opt) ([]SchemaEntry, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", topic, err)
	}
	defer cl.Close()
	end, err := highWatermark(ctx, cl, topic)
	if err != nil {
		return nil, err
	}
	byKey := map[string]SchemaEntry{}
	var order []string
	next := int64(0)
	for next < end {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, ctx.Err())
		}
		if errs := fs.Errors(); len(errs) > 0 && errs[0].Err != context.DeadlineExceeded {
			return nil, fmt.Errorf("reading %s[0]: %w", topic, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			var k schemaKey
			if json.Unmarshal(r.Key, &k) != nil || k.KeyType != "SCHEMA" || r.Value == nil {
				return
			}
			var e SchemaEntry
			if json.Unmarshal(r.Value, &e) != nil {
				return
			}
			id := string(r.Key)
			if _, ok := byKey[id]; !ok {
				order = append(order, id)
			}
			byKey[id] = e
		})
	}
	out := make([]SchemaEntry, 0, len(order))
	for _, k := range order {
		if e := byKey[k]; !e.Deleted {
			out = append(out, e)
		}
	}
	return out, nil
}

// Register registers schema under subject the way a Confluent registry would
// store it: the same schema text keeps its global id, a new one takes the next
// id, and the subject gets the next version unless it already has the schema.
// It returns the id. opts add to or override the clients' options.
func Register(ctx context.Context, brokers []string, topic, subject, schema string, opts ...kgo.Opt) (int, error) {
	entries, err := ReadSchemas(ctx, brokers, topic, opts...)
	if err != nil {
		return 0, err
	}
	id, maxID, maxVer := 0, 0, 0
	for _, e := range entries {
		maxID = max(maxID, e.ID)
		if e.Schema == schema {
			id = e.ID
			if e.Subject == subject {
				return e.ID, nil
			}
		}
		if e.Subject == subject {
			maxVer = max(maxVer, e.Version)
		}
	}
	if id == 0 {
		id = maxID + 1
	}
	k, _ := json.Marshal(schemaKey{KeyType: "SCHEMA", Subject: subject, Version: maxVer + 1, Magic: 1})
	v, _ := json.Marshal(SchemaEntry{Subject: subject, Version: maxVer + 1, ID: id, Schema: schema})
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		return 0, fmt.Errorf("registering %s in %s: %w", subject, topic, err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: k, Value: v}).FirstErr(); err != nil {
		return 0, fmt.Errorf("registering %s in %s: %w", subject, topic, err)
	}
	return id, nil
}
