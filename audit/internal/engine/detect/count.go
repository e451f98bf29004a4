package detect

// Undercount is the rule of a count table (KGroupedStream#count): for a key
// whose changelog's newest record, st, is a count (HasCount) and which
// processed records of the key reached (processed: the candidates of the
// key, minus those still pending in the repartition tail), checked says
// the rule applied, and bad that the count is lower: lost updates are
// missing from it.
//
// Proof: KStreamAggregate adds one to the key's count for every record
// with a non-null key and value it processes and writes the new count
// (caching only delays the write to the commit; the commit flushes the
// store, and so the changelog, before it commits the offsets). Every
// candidate below the committed offsets of both hops was therefore
// counted before the changelog record the audit reads (read after the
// offsets). The input may no longer hold every record the application
// processed (retention, compaction): processed is then smaller than the
// true number, which can only hide an undercount, never invent one. A
// higher count is duplication (at-least-once), not loss. A tombstone or a
// value that is not a Long gives no count and no check. A reconcile step
// reads only the records processed since the last step: InputState.Processed
// adds what earlier steps counted, each candidate counted once, by the step
// that finds it no longer pending; a state that never counted (written
// before counts were kept) gives processed -1, no check.
func Undercount(st StageState, processed int64) (lost int64, checked, bad bool) {
	if !st.Has || st.Tombstone || !st.HasCount || processed <= 0 {
		return 0, false, false
	}
	if st.Count >= processed {
		return 0, true, false
	}
	return processed - st.Count, true, true
}
