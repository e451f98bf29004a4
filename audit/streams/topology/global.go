package topology

import (
	"fmt"
	"slices"
	"strings"
)

// The behaviours of a KStream-GlobalKTable left join for a record whose
// key mapper returns null (pipeline.nodes[i].null_mapped_key).
const (
	// NullMappedKeyJoined: the record is joined with a null table value
	// (Kafka Streams 4.1 and later, KAFKA-19208: maybeDropRecord keeps a
	// left join's record with a value whatever its mapped key).
	NullMappedKeyJoined = "joined"
	// NullMappedKeyNever: the key mapper returns a key for every record
	// with a value (the user's word), so no version drops one.
	NullMappedKeyNever = "never"
)

// globalBeforeAggregation is why a KStream-GlobalKTable join before an
// aggregation is refused.
const globalBeforeAggregation = "a KStream-GlobalKTable join is audited on a per-record stream stage only (nothing but mapValues, peek, merge, repartition(), declared filters and branches after it into the output); one before an aggregation is not audited yet"

// globalStores returns the stores of the global store blocks
// ("Sub-topology: N for global store"), in text order.
func (t *Topology) globalStores() []string {
	var out []string
	for _, st := range t.SubTopologies {
		if !st.Global {
			continue
		}
		for _, n := range st.Nodes {
			out = append(out, n.Stores...)
		}
	}
	return out
}

// hasGlobalStore says whether t has a global store block.
func (t *Topology) hasGlobalStore() bool { return len(t.globalStores()) > 0 }

// globalJoin checks a KStream-GlobalKTable join node on a stream path
// and returns the global stores it may read. KStreamImpl#globalTableJoin
// names inner and left joins alike (KSTREAM-LEFTJOIN-, or the given name)
// and connects no store: the join reads the global store through its
// value getter, which describe() does not show, so the join's type is
// declared (global-left-join, global-inner-join) and its store is the
// topology's one global store, or one of several.
//
// A left join (KStreamKTableJoinProcessor with leftJoin set) forwards
// record.withValue(joiner(...)) for every record it does not drop: the
// stream record's key and timestamp. maybeDropRecord drops a null value
// in every version; a null mapped key is dropped by Kafka Streams before
// 4.1 (for a record with a key; from 3.7 a null-key record is joined,
// KAFKA-12317) and joined with a null table value from 4.1 (KAFKA-19208).
// So, declared joined (4.1+) or never (the mapper returns a key for every
// record with a value), exactly the records with a null value are
// dropped; any other declaration is refused by the configuration.
func (t *Topology) globalJoin(n *Node, c Classified, decl Declarations, unsupported func(*Node, string) error) ([]string, error) {
	stores := t.globalStores()
	switch {
	case n.Kind != Processor || len(n.Stores) > 0 || len(stores) == 0:
		return nil, unsupported(n, "a KStream-GlobalKTable join is a processor with no store of its own in a topology with a global store")
	case c.Kind == KindGlobalInnerJoin:
		return nil, unsupported(n, "an inner KStream-GlobalKTable join writes a record only when the global store held its mapped key when it was processed, and the global store is updated by its own thread: which records had a match cannot be told from the topics; only left joins are audited")
	}
	switch nk := nullMappedKey(decl, n.Name); nk {
	case NullMappedKeyJoined, NullMappedKeyNever:
	default:
		return nil, unsupported(n, fmt.Sprintf("a KStream-GlobalKTable left join needs the behaviour of a null mapped key declared, pipeline.nodes: [{name: %s, kind: global-left-join, null_mapped_key: joined}] for Kafka Streams 4.1 and later (a null mapped key is joined with a null table value), or null_mapped_key: never when the key mapper returns a key for every record with a value; earlier versions drop such records, which the topics cannot show", n.Name))
	}
	return stores, nil
}

// nullMappedKey is the declared null_mapped_key of node name, "" for none.
func nullMappedKey(decl Declarations, name string) string {
	return strings.ToLower(strings.TrimSpace(decl.NullMappedKeys[name]))
}

// globalNames says which global store a join reads, for messages: the one
// global store, or one of several.
func globalNames(stores []string) string {
	if len(stores) == 1 {
		return "global store " + stores[0]
	}
	return "one of the global stores " + strings.Join(slices.Clip(stores), ", ")
}
