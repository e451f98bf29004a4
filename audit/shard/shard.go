// Package shard runs one shard of a sharded audit of a Kafka Streams
// pipeline (docs/scale.md): N processes (a Kubernetes Indexed Job) that
// share one directory. Index 0 takes the snapshot once and writes it as
// the manifest; every index reads its share of the input partitions (map)
// and writes the per-key evidence for each reduce shard, then judges the
// keys of its task partitions (reduce); index 0 merges the reduces' parts
// into the result a single audit gives. What is read and judged is
// audit/streams' own code; this package keeps the files, the attempts and
// the waiting.
package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/streams"
)

// formatVersion is the version of the manifest and the files it governs.
const formatVersion = 1

// Options configure one shard.
type Options struct {
	// Dir is the directory every shard shares, or s3://bucket/prefix
	// for an S3 bucket (docs/scale.md#storage).
	Dir string
	// S3 are the S3 backend's settings (with an s3:// Dir).
	S3 S3Config
	// Shards is the number of shards, Index this one's (0 takes the
	// snapshot and merges).
	Shards, Index int
	// Config identifies the configuration; the manifest pins it, and a
	// shard of another configuration is refused.
	Config string
	// Wait bounds each wait for other shards (default 24h); Poll is the
	// interval between looks (default 1s).
	Wait, Poll time.Duration
	// Log receives progress lines; nil for none.
	Log io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
	// KeepAttempts keeps, after the merge, what no marker names (the
	// files of killed or duplicate attempts); by default index 0 removes
	// them once the merge has read every part (docs/scale.md).
	KeepAttempts bool
	// Job identifies the invocation (a Kubernetes Job's uid) in a sharded
	// reconciliation: a step whose manifest another job took, left
	// unmerged, is completed and followed by one of this job's
	// (StepResult.Earlier). Empty: every process runs one step.
	Job string
	// Hook, when set, is called at named points of the shard's work
	// ("map-entry": the first input entry routed; "map-written": the map's
	// files complete, its marker not yet written; "reduce-read": the first
	// changelog or output record read by the reduce; "reduce-written");
	// an error it returns stops the shard there, as a killed process would
	// (tests).
	Hook func(point string) error

	store Store
}

// Stats are what one shard read and shuffled.
type Stats struct {
	// RunID is the manifest's run.
	RunID string
	// SnapshotRecords are the repartition records index 0 read during
	// the snapshot; MapRecords the input records this shard read;
	// ReduceRecords the changelog and output records.
	SnapshotRecords, MapRecords, ReduceRecords int64
	// ShuffledEntries and ShuffledBytes are what this shard's map wrote
	// for all reduce shards; ReduceEntries the entries in its index.
	ShuffledEntries, ShuffledBytes, ReduceEntries int64
	// MapSkipped and ReduceSkipped say a completed earlier attempt was
	// kept.
	MapSkipped, ReduceSkipped bool
	// Removed is the number of unreferenced attempt directories, runs and
	// temporary files index 0 removed after the merge.
	Removed int
}

// MismatchError says the shard directory holds another run: another
// configuration or another number of shards.
type MismatchError struct{ Msg string }

func (e *MismatchError) Error() string { return e.Msg }

// WaitError says a shard waited in vain for others.
type WaitError struct{ Msg string }

func (e *WaitError) Error() string { return e.Msg }

// manifest is the run's commit point: the snapshot every shard reads.
type manifest struct {
	Version  int
	RunID    string
	Job      string
	Shards   int
	Config   string
	Created  time.Time
	Snapshot *streams.ShardSnapshot
}

// marker names the complete attempt of a map or a reduce.
type marker struct {
	Attempt         string
	Entries, Bytes  []int64
	Records, Stored int64
}

// layout names the objects of a run, relative to the store's root.
// prefix is "" for an audit, "step-<k>/" for a reconcile step's.
type layout struct{ prefix, run string }

func (l layout) manifest() string    { return l.prefix + "manifest" }
func (l layout) runDir() string      { return l.prefix + "run-" + l.run }
func (l layout) snapshotDir() string { return joinName(l.runDir(), "snapshot") }
func (l layout) mapDone(i int) string {
	return joinName(l.runDir(), fmt.Sprintf("map-%d.done", i))
}
func (l layout) reduceDone(i int) string {
	return joinName(l.runDir(), fmt.Sprintf("reduce-%d.done", i))
}
func (l layout) mapDir(i int, attempt string) string {
	return joinName(l.runDir(), fmt.Sprintf("map-%d", i), attempt)
}
func (l layout) reduceDir(i int, attempt string) string {
	return joinName(l.runDir(), fmt.Sprintf("reduce-%d", i), attempt)
}

// Run runs shard so.Index of so.Shards with the audit's options o (o.Store
// is the shard's own scratch index). Index 0 returns the merged result;
// the others return a nil result once their reduce is complete.
func Run(ctx context.Context, so Options, o streams.Options) (*finding.Result, *Stats, error) {
	so, err := so.open(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	attempt, err := newAttempt()
	if err != nil {
		return nil, nil, err
	}
	st := &Stats{}
	m, err := loadOrTake(ctx, so, layout{}, func(emit func(int, []byte, index.Entry) error) (*streams.ShardSnapshot, error) {
		return streams.TakeShardSnapshot(ctx, o, so.Shards, emit)
	})
	if err != nil {
		return nil, nil, err
	}
	st.RunID, st.SnapshotRecords = m.RunID, m.Snapshot.Records
	l := layout{run: m.RunID}
	if err := runMap(ctx, so, o, m, l, attempt, st); err != nil {
		return nil, nil, err
	}
	if err := runReduce(ctx, so, o, m, l, attempt, st); err != nil {
		return nil, nil, err
	}
	if so.Index != 0 {
		so.logf("shard %d of %d: done (run %s); index 0 writes the reports", so.Index, so.Shards, m.RunID)
		return nil, st, nil
	}
	res, maps, reduces, err := merge(ctx, so, o, m, l)
	if err != nil {
		return nil, nil, err
	}
	if !so.KeepAttempts {
		// Only what no marker names goes: the attempts the markers name
		// stay, so index 0 restarted before its reports are written (or
		// after) merges the same parts again.
		if st.Removed, err = cleanup(ctx, so.store, l, maps, reduces); err != nil {
			return nil, nil, err
		}
		if st.Removed > 0 {
			so.logf("shard 0 of %d: removed %d unreferenced attempt directories and temporary files of run %s", so.Shards, st.Removed, m.RunID)
		}
	}
	return res, st, nil
}

// open checks so, fills in its defaults and opens its store, for options
// o.
func (so Options) open(ctx context.Context, o streams.Options) (Options, error) {
	if so.Shards < 1 || so.Index < 0 || so.Index >= so.Shards {
		return so, &MismatchError{Msg: fmt.Sprintf("shard index %d is not one of %d shards", so.Index, so.Shards)}
	}
	if so.Dir == "" {
		return so, &MismatchError{Msg: "no shard directory"}
	}
	if so.Wait <= 0 {
		so.Wait = 24 * time.Hour
	}
	if so.Poll <= 0 {
		so.Poll = time.Second
	}
	if so.Now == nil {
		so.Now = time.Now
	}
	if so.Hook == nil {
		so.Hook = func(string) error { return nil }
	}
	if err := streams.CheckShardable(o); err != nil {
		return so, err
	}
	sto, err := OpenStore(ctx, so.Dir, so.S3)
	if err != nil {
		return so, err
	}
	so.store = sto
	return so, nil
}

func (so Options) logf(format string, args ...any) {
	if so.Log != nil {
		fmt.Fprintf(so.Log, "lossaudit: "+format+"\n", args...)
	}
}

// loadOrTake returns the run's manifest: index 0 takes the snapshot and
// writes it unless it exists (a restarted index 0 reuses it: a second
// snapshot would split the run); the others wait for it.
func loadOrTake(ctx context.Context, so Options, base layout, take func(emit func(int, []byte, index.Entry) error) (*streams.ShardSnapshot, error)) (*manifest, error) {
	st := so.store
	path := base.manifest()
	if so.Index != 0 {
		err := wait(ctx, so, "the manifest (index 0 takes the snapshot)", func() (int, int, error) {
			ok, err := st.Exists(ctx, path)
			if ok {
				return 1, 1, err
			}
			return 0, 1, err
		})
		if err != nil {
			return nil, err
		}
	}
	ok, err := st.Exists(ctx, path)
	if err != nil {
		return nil, err
	}
	if ok {
		m := &manifest{}
		if err := readGob(ctx, st, path, m); err != nil {
			return nil, err
		}
		if err := check(so, m, st.Describe(path)); err != nil {
			return nil, err
		}
		if so.Index == 0 {
			so.logf("shard 0 of %d: the manifest of run %s exists (taken %s): reused", so.Shards, m.RunID, m.Created.UTC().Format(time.RFC3339))
		}
		return m, nil
	}
	run, err := newAttempt()
	if err != nil {
		return nil, err
	}
	l := layout{prefix: base.prefix, run: run}
	b, err := newBuckets(ctx, st, l.snapshotDir(), so.Shards)
	if err != nil {
		return nil, err
	}
	created := so.Now()
	snap, err := take(b.add)
	if err != nil {
		b.abort()
		return nil, err
	}
	if err := b.close(); err != nil {
		return nil, err
	}
	m := &manifest{Version: formatVersion, RunID: run, Job: so.Job, Shards: so.Shards, Config: so.Config, Created: created, Snapshot: snap}
	if err := createAtomic(ctx, st, path, m); errors.Is(err, os.ErrExist) {
		// Another index 0 (a duplicate pod) wrote its manifest first: the
		// run is that one, this snapshot is dropped.
		m = &manifest{}
		if err := readGob(ctx, st, path, m); err != nil {
			return nil, err
		}
		so.logf("shard 0 of %d: another index 0 wrote the manifest of run %s first: joined it", so.Shards, m.RunID)
		return m, check(so, m, st.Describe(path))
	} else if err != nil {
		return nil, err
	}
	so.logf("shard 0 of %d: snapshot taken, manifest of run %s written (%d task partitions)", so.Shards, run, snap.TaskParts)
	return m, nil
}

// check refuses a manifest of another run.
func check(so Options, m *manifest, path string) error {
	switch {
	case m.Version != formatVersion:
		return &MismatchError{Msg: fmt.Sprintf("%s is of format %d, this lossaudit writes %d: use a new shard directory", path, m.Version, formatVersion)}
	case m.Shards != so.Shards:
		return &MismatchError{Msg: fmt.Sprintf("%s is of a run of %d shards, this shard is one of %d: use a new shard directory", path, m.Shards, so.Shards)}
	case m.Config != so.Config:
		return &MismatchError{Msg: fmt.Sprintf("%s is of a run of another configuration (digest %.12s, this one %.12s): use a new shard directory", path, m.Config, so.Config)}
	case m.Snapshot == nil || m.Snapshot.TaskParts < 1:
		return &MismatchError{Msg: fmt.Sprintf("%s holds no snapshot", path)}
	}
	return nil
}

// wait polls count (done, of total) until done == total, showing progress
// when it changes, bounded by so.Wait.
func wait(ctx context.Context, so Options, what string, count func() (int, int, error)) error {
	deadline := so.Now().Add(so.Wait)
	last := -1
	for {
		done, total, err := count()
		if err != nil {
			return err
		}
		if done == total {
			return nil
		}
		if done != last {
			so.logf("shard %d of %d: waiting for %s: %d of %d complete", so.Index, so.Shards, what, done, total)
			last = done
		}
		if !so.Now().Before(deadline) {
			return &WaitError{Msg: fmt.Sprintf("shard %d of %d: waited %s for %s: %d of %d complete", so.Index, so.Shards, so.Wait, what, done, total)}
		}
		t := time.NewTimer(so.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// countDone counts the markers of paths that exist. A marker is never
// replaced nor removed, so one seen (in seen) is not asked for again: a
// waiting shard asks only for the markers still missing (a request each
// on S3).
func countDone(ctx context.Context, st Store, paths []string, seen map[string]bool) (int, int, error) {
	n := 0
	for _, p := range paths {
		if seen[p] {
			n++
			continue
		}
		ok, err := st.Exists(ctx, p)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			seen[p] = true
			n++
		}
	}
	return n, len(paths), nil
}

func runMap(ctx context.Context, so Options, o streams.Options, m *manifest, l layout, attempt string, st *Stats) error {
	done := l.mapDone(so.Index)
	if ok, err := so.store.Exists(ctx, done); err != nil || ok {
		st.MapSkipped = ok
		if ok {
			mk := &marker{}
			if err := readGob(ctx, so.store, done, mk); err != nil {
				return err
			}
			st.MapRecords = mk.Records
			for r := range mk.Entries {
				st.ShuffledEntries += mk.Entries[r]
				st.ShuffledBytes += mk.Bytes[r]
			}
			so.logf("shard %d of %d: map already complete (attempt %s)", so.Index, so.Shards, mk.Attempt)
		}
		return err
	}
	dir := l.mapDir(so.Index, attempt)
	b, err := newBuckets(ctx, so.store, dir, so.Shards)
	if err != nil {
		return err
	}
	first := true
	res, err := streams.ShardMap(ctx, o, m.Snapshot, so.Shards, so.Index, func(key []byte, e index.Entry) error {
		if first {
			first = false
			if err := so.Hook("map-entry"); err != nil {
				return err
			}
		}
		return b.add(streams.KeyShard(key, m.Snapshot.TaskParts, so.Shards), key, e)
	})
	if err != nil {
		b.abort()
		return err
	}
	if err := b.close(); err != nil {
		return err
	}
	if err := writeAtomic(ctx, so.store, joinName(dir, "counts"), res); err != nil {
		return err
	}
	if err := so.Hook("map-written"); err != nil {
		return err
	}
	mk := &marker{Attempt: attempt, Entries: b.Entries, Bytes: b.Bytes, Records: res.Records}
	if err := createAtomic(ctx, so.store, done, mk); errors.Is(err, os.ErrExist) {
		// Another attempt of this index (a duplicate pod) marked its
		// output first: the marker never changes once written, so the
		// merge and its cleanup see one attempt; this one's is dropped.
		return adoptMap(ctx, so, done, dir, st)
	} else if err != nil {
		return err
	}
	st.MapRecords = res.Records
	for r := range b.Entries {
		st.ShuffledEntries += b.Entries[r]
		st.ShuffledBytes += b.Bytes[r]
	}
	so.logf("shard %d of %d: map complete: %d input records read, %d entries (%d bytes) written for %d shards", so.Index, so.Shards, res.Records, st.ShuffledEntries, st.ShuffledBytes, so.Shards)
	return nil
}

// mapMarkers waits for every map's marker and returns them.
func mapMarkers(ctx context.Context, so Options, l layout) ([]*marker, error) {
	var paths []string
	for i := 0; i < so.Shards; i++ {
		paths = append(paths, l.mapDone(i))
	}
	seen := map[string]bool{}
	if err := wait(ctx, so, "the map outputs", func() (int, int, error) { return countDone(ctx, so.store, paths, seen) }); err != nil {
		return nil, err
	}
	out := make([]*marker, so.Shards)
	for i, p := range paths {
		out[i] = &marker{}
		if err := readGob(ctx, so.store, p, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func runReduce(ctx context.Context, so Options, o streams.Options, m *manifest, l layout, attempt string, st *Stats) error {
	done := l.reduceDone(so.Index)
	if ok, err := so.store.Exists(ctx, done); err != nil || ok {
		st.ReduceSkipped = ok
		if ok {
			mk := &marker{}
			if err := readGob(ctx, so.store, done, mk); err != nil {
				return err
			}
			st.ReduceRecords, st.ReduceEntries = mk.Records, mk.Stored
			so.logf("shard %d of %d: reduce already complete (attempt %s)", so.Index, so.Shards, mk.Attempt)
		}
		return err
	}
	maps, err := mapMarkers(ctx, so, l)
	if err != nil {
		return err
	}
	res, err := streams.ShardReduce(ctx, o, m.Snapshot, so.Shards, so.Index, loadBuckets(ctx, so, l, maps), func() error { return so.Hook("reduce-read") })
	if err != nil {
		return err
	}
	dir := l.reduceDir(so.Index, attempt)
	if err := writeAtomic(ctx, so.store, joinName(dir, "result"), res); err != nil {
		return err
	}
	if err := so.Hook("reduce-written"); err != nil {
		return err
	}
	if err := createAtomic(ctx, so.store, done, &marker{Attempt: attempt, Records: res.Records, Stored: res.Entries}); errors.Is(err, os.ErrExist) {
		// As for a map: the first marked attempt is the reduce's.
		if err := so.store.RemoveAll(ctx, dir); err != nil {
			return fmt.Errorf("shard: removing the dropped attempt: %w", err)
		}
		mk := &marker{}
		if err := readGob(ctx, so.store, done, mk); err != nil {
			return err
		}
		st.ReduceSkipped, st.ReduceRecords, st.ReduceEntries = true, mk.Records, mk.Stored
		so.logf("shard %d of %d: another attempt (%s) completed the reduce first: kept, this one dropped", so.Index, so.Shards, mk.Attempt)
		return nil
	} else if err != nil {
		return err
	}
	st.ReduceRecords, st.ReduceEntries = res.Records, res.Entries
	so.logf("shard %d of %d: reduce complete: %d changelog and output records read, %d keys judged, %d rows", so.Index, so.Shards, res.Records, res.Keys, len(res.Rows))
	return nil
}

// loadBuckets returns what hands a reduce its buckets: the snapshot's and
// those of every map's marked attempt.
func loadBuckets(ctx context.Context, so Options, l layout, maps []*marker) func(add streams.Emit) error {
	return func(add streams.Emit) error {
		if err := readBucket(ctx, so.store, bucketPath(l.snapshotDir(), so.Index), add); err != nil {
			return err
		}
		for i, mk := range maps {
			if err := readBucket(ctx, so.store, bucketPath(l.mapDir(i, mk.Attempt), so.Index), add); err != nil {
				return err
			}
		}
		return nil
	}
}

// merge waits for every reduce and assembles the result from the maps'
// and the reduces' parts; it returns the result and the markers it read.
func merge(ctx context.Context, so Options, o streams.Options, m *manifest, l layout) (*finding.Result, []*marker, []*marker, error) {
	mres, rres, maps, reduces, err := readParts(ctx, so, l)
	if err != nil {
		return nil, nil, nil, err
	}
	res, err := streams.ShardMerge(ctx, o, m.Snapshot, mres, rres, m.Created)
	if err != nil {
		return nil, nil, nil, err
	}
	return res, maps, reduces, nil
}

// readParts waits for every reduce and reads the maps' and the reduces'
// parts with their markers.
func readParts(ctx context.Context, so Options, l layout) ([]*streams.ShardMapResult, []*streams.ShardReduceResult, []*marker, []*marker, error) {
	var paths []string
	for i := 0; i < so.Shards; i++ {
		paths = append(paths, l.reduceDone(i))
	}
	seen := map[string]bool{}
	if err := wait(ctx, so, "the reduce outputs", func() (int, int, error) { return countDone(ctx, so.store, paths, seen) }); err != nil {
		return nil, nil, nil, nil, err
	}
	maps, err := mapMarkers(ctx, so, l)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var mres []*streams.ShardMapResult
	for i, mk := range maps {
		r := &streams.ShardMapResult{}
		if err := readGob(ctx, so.store, joinName(l.mapDir(i, mk.Attempt), "counts"), r); err != nil {
			return nil, nil, nil, nil, err
		}
		mres = append(mres, r)
	}
	var rres []*streams.ShardReduceResult
	var reduces []*marker
	for i, p := range paths {
		mk := &marker{}
		if err := readGob(ctx, so.store, p, mk); err != nil {
			return nil, nil, nil, nil, err
		}
		r := &streams.ShardReduceResult{}
		if err := readGob(ctx, so.store, joinName(l.reduceDir(i, mk.Attempt), "result"), r); err != nil {
			return nil, nil, nil, nil, err
		}
		rres = append(rres, r)
		reduces = append(reduces, mk)
	}
	return mres, rres, maps, reduces, nil
}

// adoptMap makes the map's marked attempt this shard's after another
// attempt of the index marked its output first: this attempt's directory
// dir is removed, the stats are the winner's.
func adoptMap(ctx context.Context, so Options, done, dir string, st *Stats) error {
	if err := so.store.RemoveAll(ctx, dir); err != nil {
		return fmt.Errorf("shard: removing the dropped attempt: %w", err)
	}
	mk := &marker{}
	if err := readGob(ctx, so.store, done, mk); err != nil {
		return err
	}
	st.MapSkipped, st.MapRecords = true, mk.Records
	for r := range mk.Entries {
		st.ShuffledEntries += mk.Entries[r]
		st.ShuffledBytes += mk.Bytes[r]
	}
	so.logf("shard %d of %d: another attempt (%s) completed the map first: kept, this one dropped", so.Index, so.Shards, mk.Attempt)
	return nil
}
