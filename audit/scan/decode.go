package scan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/schema"
)

// SchemaDecoder is what `scan --decode` needs from the schema sources;
// *schema.Registry has it.
type SchemaDecoder interface {
	Decode(ctx context.Context, value []byte) (id uint32, datum any, err error)
	Subjects(ctx context.Context, id uint32) []schema.SubjectVersion
}

// SchemaUse is one schema id seen in a partition.
type SchemaUse struct {
	ID       uint32   `json:"id"`
	Subjects []string `json:"subjects"`
	Records  int64    `json:"records"`
}

// Decoding is what `scan --decode` found in one partition: the schema ids
// of its values, and its decode errors by kind (short, bad_magic,
// unknown_schema, avro).
type Decoding struct {
	Schemas []SchemaUse      `json:"schemas"`
	Errors  map[string]int64 `json:"decode_errors_by_kind"`
}

// Decoder decodes every committed value of a scan with its writer schema
// and tallies schema ids and decode errors per partition. Null values
// (tombstones) are not errors. Its Check method is an Options.Check.
type Decoder struct {
	ctx context.Context
	dec SchemaDecoder

	mu    sync.Mutex
	parts map[kread.TP]*partDecoding
	// fatal is the first error that means schemas cannot be looked up at
	// all (every source down, credentials rejected).
	fatal error
}

type partDecoding struct {
	ids    map[uint32]int64
	errors map[string]int64
}

// NewDecoder returns a Decoder using dec; ctx bounds schema lookups.
func NewDecoder(ctx context.Context, dec SchemaDecoder) *Decoder {
	return &Decoder{ctx: ctx, dec: dec, parts: map[kread.TP]*partDecoding{}}
}

// Check decodes one record's value; it returns an error for a value that
// does not decode, which the scan counts as a decode error.
func (d *Decoder) Check(rec *kread.Record) error {
	if rec.Value == nil {
		return nil
	}
	id, _, err := d.dec.Decode(d.ctx, rec.Value)
	d.mu.Lock()
	defer d.mu.Unlock()
	tp := kread.TP{Topic: rec.Topic, Partition: rec.Partition}
	p := d.parts[tp]
	if p == nil {
		p = &partDecoding{ids: map[uint32]int64{}, errors: map[string]int64{}}
		d.parts[tp] = p
	}
	if err == nil {
		p.ids[id]++
		return nil
	}
	var de *schema.DecodeError
	if !errors.As(err, &de) {
		if d.fatal == nil {
			d.fatal = fmt.Errorf("decoding %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
		}
		p.errors["schema_lookup_failed"]++
		return err
	}
	if de.HasID {
		p.ids[de.SchemaID]++
	}
	p.errors[de.Kind.String()]++
	return err
}

// Err returns the first error that was not about one record but about
// looking schemas up at all; the scan's decode counts are then unreliable.
func (d *Decoder) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fatal
}

// Attach fills rows[i].Decode from what Check saw.
func (d *Decoder) Attach(rows []Row) {
	d.mu.Lock()
	defer d.mu.Unlock()
	subjects := map[uint32][]string{}
	for i := range rows {
		r := &rows[i]
		dec := &Decoding{Schemas: []SchemaUse{}, Errors: map[string]int64{}}
		if p := d.parts[kread.TP{Topic: r.Topic, Partition: r.Partition}]; p != nil {
			for id, n := range p.ids {
				subs, ok := subjects[id]
				if !ok {
					for _, sv := range d.dec.Subjects(d.ctx, id) {
						s := fmt.Sprintf("%s/%d", sv.Subject, sv.Version)
						if sv.Deleted {
							s += " (deleted)"
						}
						subs = append(subs, s)
					}
					if subs == nil {
						subs = []string{}
					}
					subjects[id] = subs
				}
				dec.Schemas = append(dec.Schemas, SchemaUse{ID: id, Subjects: subs, Records: n})
			}
			for k, n := range p.errors {
				dec.Errors[k] = n
			}
		}
		sort.Slice(dec.Schemas, func(a, b int) bool { return dec.Schemas[a].ID < dec.Schemas[b].ID })
		r.Decode = dec
	}
}

// WriteDecoding writes, per topic, the schema ids seen with their subjects
// and record counts, and the decode errors by kind: the table form of
// `scan --decode`.
func WriteDecoding(w io.Writer, rows []Row) error {
	type topicAcc struct {
		ids    map[uint32]*SchemaUse
		errors map[string]int64
	}
	var order []string
	acc := map[string]*topicAcc{}
	for _, r := range rows {
		if r.Decode == nil {
			continue
		}
		t := acc[r.Topic]
		if t == nil {
			t = &topicAcc{ids: map[uint32]*SchemaUse{}, errors: map[string]int64{}}
			acc[r.Topic] = t
			order = append(order, r.Topic)
		}
		for _, s := range r.Decode.Schemas {
			u := t.ids[s.ID]
			if u == nil {
				u = &SchemaUse{ID: s.ID, Subjects: s.Subjects}
				t.ids[s.ID] = u
			}
			u.Records += s.Records
		}
		for k, n := range r.Decode.Errors {
			t.errors[k] += n
		}
	}
	var b strings.Builder
	b.WriteString("\nSchemas and decode errors (--decode)\n")
	for _, topic := range order {
		t := acc[topic]
		fmt.Fprintf(&b, "  %s\n", topic)
		ids := make([]uint32, 0, len(t.ids))
		for id := range t.ids {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		if len(ids) == 0 {
			b.WriteString("    no framed values\n")
		}
		for _, id := range ids {
			u := t.ids[id]
			subs := "subject unknown"
			if len(u.Subjects) > 0 {
				subs = strings.Join(u.Subjects, ", ")
			}
			fmt.Fprintf(&b, "    schema id %d (%s): %d records\n", id, subs, u.Records)
		}
		kinds := make([]string, 0, len(t.errors))
		for k := range t.errors {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		if len(kinds) == 0 {
			b.WriteString("    decode errors: none\n")
		}
		for _, k := range kinds {
			fmt.Fprintf(&b, "    decode errors, %s: %d\n", k, t.errors[k])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
