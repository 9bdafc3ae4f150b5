package checkpointtest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/internal/testcheck"
)

// Run checks that savers made by newSaver behave as graph.Checkpointer
// says. newSaver must return an empty saver that is not shared with other
// calls; it registers its own cleanup with t.Cleanup. Subtests run in
// parallel, so the saver must be safe for concurrent use anyway.
func Run(t *testing.T, newSaver func(t *testing.T) graph.Checkpointer) {
	testcheck.RunCases(t, newSaver, testcheck.Cases[graph.Checkpointer]{
		{"RoundTrip", testRoundTrip},
		{"GetLatest", testGetLatest},
		{"NotFound", testNotFound},
		{"NamespacesIsolated", testNamespacesIsolated},
		{"BlobsOfNamedVersionsOnly", testBlobsOfNamedVersionsOnly},
		{"UnchangedFieldShared", testUnchangedFieldShared},
		{"DeltaChains", testDeltaChains},
		{"BlobPutTwice", testBlobPutTwice},
		{"Batch", testBatch},
		{"Writes", testWrites},
		{"WritesUnknownCheckpoint", testWritesUnknownCheckpoint},
		{"List", testList},
		{"DeleteThread", testDeleteThread},
		{"Concurrent", testConcurrent},
		{"NoAliasing", testNoAliasing},
		{"CanceledContext", testCanceledContext},
		{"Prune", testPrune},
		{"PruneEngine", testPruneEngine},
		{"PrunePins", testPrunePins},
	})
}

// created is a µs-precision time outside UTC: backends may store UTC at µs
// precision, and must still return the same instant.
var created = time.Date(2026, 11, 3, 14, 5, 6, 123456000, time.FixedZone("CET", 3600))

// checkpoint returns a minimal valid checkpoint of thread "t" in the root
// namespace.
func checkpoint(id string, versions map[string]string) graph.Checkpoint {
	return graph.Checkpoint{
		ThreadID:  "t",
		ID:        id,
		Step:      1,
		Source:    graph.SourceLoop,
		CreatedAt: created,
		Versions:  versions,
	}
}

func blob(field, version, data string) graph.Blob {
	return graph.Blob{Field: field, Version: version, Data: []byte(data)}
}

func delta(field, version, base, data string) graph.Blob {
	return graph.Blob{Field: field, Version: version, Delta: true, Base: base, Data: []byte(data)}
}

func put(t *testing.T, s graph.Checkpointer, cp graph.Checkpoint, blobs ...graph.Blob) {
	t.Helper()
	if err := s.Put(t.Context(), cp, blobs); err != nil {
		t.Fatalf("Put %s/%s/%s: %v", cp.ThreadID, cp.Namespace, cp.ID, err)
	}
}

func get(t *testing.T, s graph.Checkpointer, ref graph.Ref) *graph.Saved {
	t.Helper()
	saved, err := s.Get(t.Context(), ref)
	if err != nil {
		t.Fatalf("Get %+v: %v", ref, err)
	}
	return saved
}

func putWrites(t *testing.T, s graph.Checkpointer, ref graph.Ref, writes ...graph.Write) {
	t.Helper()
	if err := s.PutWrites(t.Context(), ref, writes); err != nil {
		t.Fatalf("PutWrites %+v: %v", ref, err)
	}
}

// checkCheckpoint fails unless got and want are the same checkpoint.
// CreatedAt is compared as an instant, since its zone need not survive.
func checkCheckpoint(t *testing.T, got, want graph.Checkpoint) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("checkpoint %s: CreatedAt = %v, want %v", want.ID, got.CreatedAt, want.CreatedAt)
	}
	got.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("checkpoint %s:\n got %+v\nwant %+v", want.ID, got, want)
	}
}

// blobString renders blobs sorted, since the contract leaves their order
// open, in a form that shows what differs.
func blobString(blobs []graph.Blob) string {
	lines := make([]string, len(blobs))
	for i, b := range blobs {
		lines[i] = fmt.Sprintf("%s@%s delta=%t base=%q data=%q", b.Field, b.Version, b.Delta, b.Base, b.Data)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func checkBlobs(t *testing.T, what string, got []graph.Blob, want ...graph.Blob) {
	t.Helper()
	if g, w := blobString(got), blobString(want); g != w {
		t.Errorf("%s: blobs\n got:\n%s\nwant:\n%s", what, g, w)
	}
}

// checkGet checks the blobs Get returns for checkpoint id of thread t.
func checkGet(t *testing.T, s graph.Checkpointer, id string, want ...graph.Blob) {
	t.Helper()
	checkBlobs(t, "Get "+id, get(t, s, graph.Ref{ThreadID: "t", ID: id}).Blobs, want...)
}

func writeString(writes []graph.Write) string {
	lines := make([]string, len(writes))
	for i, w := range writes {
		lines[i] = fmt.Sprintf("%s#%d %s=%q", w.TaskID, w.Index, w.Channel, w.Value)
	}
	return strings.Join(lines, "\n")
}

func checkWrites(t *testing.T, what string, got []graph.Write, want ...graph.Write) {
	t.Helper()
	if g, w := writeString(got), writeString(want); g != w {
		t.Errorf("%s: writes (in order)\n got:\n%s\nwant:\n%s", what, g, w)
	}
}

func ids(cps []graph.Checkpoint) []string {
	out := make([]string, len(cps))
	for i, cp := range cps {
		out[i] = cp.ID
	}
	return out
}

func testRoundTrip(t *testing.T, s graph.Checkpointer) {
	want := graph.Checkpoint{
		ThreadID:  "thread-1",
		Namespace: "sub:task-7",
		ID:        "0002",
		ParentID:  "0001",
		Step:      7,
		Source:    graph.SourceFork,
		CreatedAt: created,
		RunID:     "run-9",
		Versions:  map[string]string{"Messages": "v3", "Count": "v1"},
		Tasks: []graph.TaskSpec{
			{ID: "task-b", Node: "tools"},
			{ID: "task-a", Node: "worker", Input: json.RawMessage(`{"item":"x","n":[1,2.5,null],"s":"é\n"}`)},
		},
		Barriers:          map[string][]string{"join": {"left", "right"}, "other": {"a"}},
		InterruptedBefore: true,
		InterruptedAfter:  []string{"review", "approve"},
	}
	blobs := []graph.Blob{
		{Field: "Messages", Version: "v3", Data: []byte(`["hi"]`)},
		{Field: "Count", Version: "v1", Data: []byte{0, 1, 2, 0xff}},
	}
	put(t, s, want, blobs...)

	saved := get(t, s, graph.Ref{ThreadID: want.ThreadID, Namespace: want.Namespace, ID: want.ID})
	checkCheckpoint(t, saved.Checkpoint, want)
	checkBlobs(t, "Get", saved.Blobs, blobs...)
	checkWrites(t, "Get", saved.Writes)
}

func testGetLatest(t *testing.T, s graph.Checkpointer) {
	for _, id := range []string{"01", "02", "10"} { // "10" > "02" as strings
		cp := checkpoint(id, map[string]string{"f": id})
		put(t, s, cp, blob("f", id, "value "+id))
	}
	saved := get(t, s, graph.Ref{ThreadID: "t"})
	if saved.Checkpoint.ID != "10" {
		t.Fatalf("Get with empty id returned checkpoint %q, want the newest, %q", saved.Checkpoint.ID, "10")
	}
	checkBlobs(t, "Get latest", saved.Blobs, blob("f", "10", "value 10"))
}

func testNotFound(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("01", nil))
	for _, ref := range []graph.Ref{
		{ThreadID: "unknown"},
		{ThreadID: "unknown", ID: "01"},
		{ThreadID: "t", ID: "02"},
		{ThreadID: "t", ID: "0"},
		{ThreadID: "t", Namespace: "other"},
		{ThreadID: "t", Namespace: "other", ID: "01"},
	} {
		saved, err := s.Get(t.Context(), ref)
		if !errors.Is(err, graph.ErrCheckpointNotFound) {
			t.Errorf("Get %+v = %v, %v; want an error matching ErrCheckpointNotFound", ref, saved, err)
		}
	}
}

func testNamespacesIsolated(t *testing.T, s graph.Checkpointer) {
	root := checkpoint("01", map[string]string{"f": "1"})
	sub := root
	sub.Namespace = "child:task-1"
	put(t, s, root, blob("f", "1", "root"))
	put(t, s, sub, blob("f", "1", "child"))
	newer := checkpoint("02", map[string]string{"f": "1"})
	put(t, s, newer) // newest in the root namespace only

	saved := get(t, s, graph.Ref{ThreadID: "t", Namespace: sub.Namespace})
	if saved.Checkpoint.ID != "01" || saved.Checkpoint.Namespace != sub.Namespace {
		t.Errorf("latest of child namespace = %s in %q, want 01 in %q", saved.Checkpoint.ID, saved.Checkpoint.Namespace, sub.Namespace)
	}
	checkBlobs(t, "child namespace", saved.Blobs, blob("f", "1", "child"))

	saved = get(t, s, graph.Ref{ThreadID: "t", ID: "01"})
	checkBlobs(t, "root namespace", saved.Blobs, blob("f", "1", "root"))

	list, err := s.List(t.Context(), graph.ListOptions{ThreadID: "t", Namespace: sub.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); !slices.Equal(got, []string{"01"}) {
		t.Errorf("List of child namespace = %v, want [01]", got)
	}
}

func testBlobsOfNamedVersionsOnly(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("01", map[string]string{"f": "1"}), blob("f", "1", "old"))
	put(t, s, checkpoint("02", map[string]string{"f": "2"}), blob("f", "2", "new"))

	checkGet(t, s, "02", blob("f", "2", "new"))
	checkGet(t, s, "01", blob("f", "1", "old"))
}

func testUnchangedFieldShared(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("01", map[string]string{"a": "1", "b": "1"}), blob("a", "1", "a1"), blob("b", "1", "b1"))
	// Only a changed: 02 carries a's new blob and still names b's old one.
	put(t, s, checkpoint("02", map[string]string{"a": "2", "b": "1"}), blob("a", "2", "a2"))

	checkGet(t, s, "02", blob("a", "2", "a2"), blob("b", "1", "b1"))
}

func testDeltaChains(t *testing.T, s graph.Checkpointer) {
	full := blob("msgs", "1", "[m1]")
	d2 := delta("msgs", "2", "1", "[m2]")
	d3 := delta("msgs", "3", "2", "[m3]")
	fork := delta("msgs", "3b", "2", "[m3b]")
	other := blob("x", "1", "x")
	put(t, s, checkpoint("01", map[string]string{"msgs": "1", "x": "1"}), full, other)
	put(t, s, checkpoint("02", map[string]string{"msgs": "2", "x": "1"}), d2)
	put(t, s, checkpoint("03", map[string]string{"msgs": "3", "x": "1"}), d3)
	// A fork from 02 extends the same base differently.
	forked := checkpoint("04", map[string]string{"msgs": "3b", "x": "1"})
	forked.ParentID, forked.Source = "02", graph.SourceFork
	put(t, s, forked, fork)
	// A delta with no base starts its own chain.
	put(t, s, checkpoint("05", map[string]string{"msgs": "5"}), delta("msgs", "5", "", "[m5]"))

	for _, tc := range []struct {
		id   string
		want []graph.Blob
	}{
		{"01", []graph.Blob{full, other}},
		{"02", []graph.Blob{full, d2, other}},
		{"03", []graph.Blob{full, d2, d3, other}},
		{"04", []graph.Blob{full, d2, fork, other}},
		{"05", []graph.Blob{delta("msgs", "5", "", "[m5]")}},
	} {
		checkGet(t, s, tc.id, tc.want...)
	}
}

// testBatch checks a BatchPutter's batch: an input's checkpoint and the
// next, whose delta builds on the first's blob, stored as two Puts
// would store them. A Checkpointer without PutBatch passes.
func testBatch(t *testing.T, s graph.Checkpointer) {
	b, ok := s.(graph.BatchPutter)
	if !ok {
		t.Skip("not a BatchPutter")
	}
	in := checkpoint("01", map[string]string{"msgs": "01", "x": "01"})
	in.Source = graph.SourceInput
	next := checkpoint("02", map[string]string{"msgs": "02", "x": "01"})
	next.ParentID = "01"
	full, other, d := blob("msgs", "01", "[m1]"), blob("x", "01", "x"), delta("msgs", "02", "01", "[m2]")
	if err := b.PutBatch(t.Context(), []graph.CheckpointPut{
		{Checkpoint: in, Blobs: []graph.Blob{full, other}},
		{Checkpoint: next, Blobs: []graph.Blob{d}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.PutBatch(t.Context(), nil); err != nil {
		t.Errorf("an empty batch: %v", err)
	}
	got, err := s.List(t.Context(), graph.ListOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "02" || got[1].ID != "01" || got[1].Source != graph.SourceInput || got[0].ParentID != "01" {
		t.Fatalf("List after the batch: %+v", got)
	}
	checkBlobs(t, "Get 01", get(t, s, graph.Ref{ThreadID: "t", ID: "01"}).Blobs, full, other)
	checkBlobs(t, "Get 02", get(t, s, graph.Ref{ThreadID: "t", ID: "02"}).Blobs, full, d, other)
	// A batch refused for one of its checkpoints stores none of them.
	bad := checkpoint("04", nil)
	bad.ThreadID = ""
	if err := b.PutBatch(t.Context(), []graph.CheckpointPut{{Checkpoint: checkpoint("03", nil)}, {Checkpoint: bad}}); err == nil {
		t.Fatal("a batch with a checkpoint without thread stored")
	}
	if got, err := s.List(t.Context(), graph.ListOptions{ThreadID: "t"}); err != nil || len(got) != 2 {
		t.Errorf("after a refused batch the thread has %d checkpoints (%v), want 2", len(got), err)
	}
}

func testBlobPutTwice(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("01", map[string]string{"f": "1"}), blob("f", "1", "first"))
	// The same version again, even with other bytes, keeps the first value:
	// a version names one value forever.
	put(t, s, checkpoint("02", map[string]string{"f": "1"}), blob("f", "1", "second"))

	checkGet(t, s, "01", blob("f", "1", "first"))
	checkGet(t, s, "02", blob("f", "1", "first"))
}

func testWrites(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("01", nil))
	put(t, s, checkpoint("02", nil))
	ref := graph.Ref{ThreadID: "t", ID: "01"}
	putWrites(t, s, ref,
		graph.Write{TaskID: "b", Index: 0, Channel: "X", Value: []byte("b0")},
		graph.Write{TaskID: "a", Index: 1, Channel: graph.ChannelDone, Value: []byte{}},
		graph.Write{TaskID: "a", Index: 0, Channel: "Y", Value: []byte("stale")},
		graph.Write{TaskID: "a", Index: 0, Channel: "Y", Value: []byte("a0")}, // replaces within a call
	)
	putWrites(t, s, ref,
		graph.Write{TaskID: "b", Index: 0, Channel: graph.ChannelError, Value: []byte("boom")}, // replaces across calls
		graph.Write{TaskID: "b", Index: 10, Channel: "Z", Value: []byte("b10")},                // 10 after 2 numerically
		graph.Write{TaskID: "b", Index: 2, Channel: "Z", Value: []byte("b2")},
	)

	want := []graph.Write{
		{TaskID: "a", Index: 0, Channel: "Y", Value: []byte("a0")},
		{TaskID: "a", Index: 1, Channel: graph.ChannelDone},
		{TaskID: "b", Index: 0, Channel: graph.ChannelError, Value: []byte("boom")},
		{TaskID: "b", Index: 2, Channel: "Z", Value: []byte("b2")},
		{TaskID: "b", Index: 10, Channel: "Z", Value: []byte("b10")},
	}
	checkWrites(t, "Get 01", get(t, s, ref).Writes, want...)
	checkWrites(t, "Get 02, which has none", get(t, s, graph.Ref{ThreadID: "t", ID: "02"}).Writes)
	checkWrites(t, "Get latest (02)", get(t, s, graph.Ref{ThreadID: "t"}).Writes)

	// Writes survive a later Put of another checkpoint's blobs.
	put(t, s, checkpoint("03", nil))
	checkWrites(t, "Get 01 after Put 03", get(t, s, ref).Writes, want...)
}

// A write against a checkpoint that does not exist would never be read
// back; the caller is told instead.
func testWritesUnknownCheckpoint(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("01", nil))
	w := graph.Write{TaskID: "a", Channel: "X", Value: []byte("x")}
	for _, ref := range []graph.Ref{
		{ThreadID: "t", ID: "02"},
		{ThreadID: "unknown", ID: "01"},
		{ThreadID: "t", Namespace: "other", ID: "01"},
	} {
		err := s.PutWrites(t.Context(), ref, []graph.Write{w})
		if !errors.Is(err, graph.ErrCheckpointNotFound) {
			t.Errorf("PutWrites %+v = %v, want an error matching ErrCheckpointNotFound", ref, err)
		}
	}
	checkWrites(t, "Get 01", get(t, s, graph.Ref{ThreadID: "t", ID: "01"}).Writes)
}

func testList(t *testing.T, s graph.Checkpointer) {
	var all []graph.Checkpoint
	for i := range 5 {
		cp := checkpoint(fmt.Sprintf("%02d", i+1), map[string]string{"f": "1"})
		cp.Step = i
		cp.Tasks = []graph.TaskSpec{{ID: fmt.Sprintf("task-%d", i), Node: "n"}}
		put(t, s, cp, blob("f", "1", "v"))
		all = append(all, cp)
	}
	other := checkpoint("99", nil)
	other.Namespace = "sub"
	put(t, s, other)
	otherThread := checkpoint("98", nil)
	otherThread.ThreadID = "t2"
	put(t, s, otherThread)

	for _, tc := range []struct {
		name string
		opts graph.ListOptions
		want []string
	}{
		{"all", graph.ListOptions{ThreadID: "t"}, []string{"05", "04", "03", "02", "01"}},
		{"limit", graph.ListOptions{ThreadID: "t", Limit: 2}, []string{"05", "04"}},
		{"before", graph.ListOptions{ThreadID: "t", Before: "04"}, []string{"03", "02", "01"}},
		{"before and limit", graph.ListOptions{ThreadID: "t", Before: "04", Limit: 2}, []string{"03", "02"}},
		{"before unknown id", graph.ListOptions{ThreadID: "t", Before: "035"}, []string{"03", "02", "01"}},
		{"before oldest", graph.ListOptions{ThreadID: "t", Before: "01"}, nil},
		{"namespace", graph.ListOptions{ThreadID: "t", Namespace: "sub"}, []string{"99"}},
		{"unknown thread", graph.ListOptions{ThreadID: "nobody"}, nil},
	} {
		list, err := s.List(t.Context(), tc.opts)
		if err != nil {
			t.Errorf("List %s: %v", tc.name, err)
			continue
		}
		if got := ids(list); !slices.Equal(got, tc.want) {
			t.Errorf("List %s (%+v) = %v, want %v", tc.name, tc.opts, got, tc.want)
		}
	}

	list, err := s.List(t.Context(), graph.ListOptions{ThreadID: "t", Limit: 1})
	if err != nil || len(list) != 1 {
		t.Fatalf("List limit 1 = %v, %v", ids(list), err)
	}
	checkCheckpoint(t, list[0], all[4]) // whole checkpoints, not just ids
}

func testDeleteThread(t *testing.T, s graph.Checkpointer) {
	for _, thread := range []string{"gone", "kept"} {
		for _, ns := range []string{"", "sub:1"} {
			cp := checkpoint("01", map[string]string{"f": "1"})
			cp.ThreadID, cp.Namespace = thread, ns
			put(t, s, cp, blob("f", "1", thread+" old"))
			putWrites(t, s, graph.Ref{ThreadID: thread, Namespace: ns, ID: "01"},
				graph.Write{TaskID: "a", Channel: "X", Value: []byte(thread)})
		}
	}
	if err := s.DeleteThread(t.Context(), "gone"); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	if err := s.DeleteThread(t.Context(), "never-existed"); err != nil {
		t.Errorf("DeleteThread of an unknown thread: %v, want nil", err)
	}

	for _, ns := range []string{"", "sub:1"} {
		if _, err := s.Get(t.Context(), graph.Ref{ThreadID: "gone", Namespace: ns}); !errors.Is(err, graph.ErrCheckpointNotFound) {
			t.Errorf("Get deleted thread, namespace %q: %v, want ErrCheckpointNotFound", ns, err)
		}
		list, err := s.List(t.Context(), graph.ListOptions{ThreadID: "gone", Namespace: ns})
		if err != nil || len(list) != 0 {
			t.Errorf("List deleted thread, namespace %q = %v, %v; want none", ns, ids(list), err)
		}

		saved := get(t, s, graph.Ref{ThreadID: "kept", Namespace: ns, ID: "01"})
		checkBlobs(t, "kept thread", saved.Blobs, blob("f", "1", "kept old"))
		checkWrites(t, "kept thread", saved.Writes, graph.Write{TaskID: "a", Channel: "X", Value: []byte("kept")})
	}

	// Old blobs and writes are gone too, not just hidden: a new checkpoint
	// reusing the version sees its own value, and no writes.
	cp := checkpoint("01", map[string]string{"f": "1"})
	cp.ThreadID = "gone"
	put(t, s, cp, blob("f", "1", "gone new"))
	saved := get(t, s, graph.Ref{ThreadID: "gone", ID: "01"})
	checkBlobs(t, "recreated thread", saved.Blobs, blob("f", "1", "gone new"))
	checkWrites(t, "recreated thread", saved.Writes)
}

func testConcurrent(t *testing.T, s graph.Checkpointer) {
	const workers, steps = 4, 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			own := fmt.Sprintf("worker-%d", w)
			for i := range steps {
				id := fmt.Sprintf("%02d-%d", i, w) // distinct ids in the shared thread too
				for _, thread := range []string{own, "shared"} {
					cp := checkpoint(id, map[string]string{"f": id})
					cp.ThreadID = thread
					if err := s.Put(t.Context(), cp, []graph.Blob{blob("f", id, thread+id)}); err != nil {
						t.Errorf("Put %s/%s: %v", thread, id, err)
						return
					}
					ref := graph.Ref{ThreadID: thread, ID: id}
					if err := s.PutWrites(t.Context(), ref, []graph.Write{{TaskID: "t", Channel: "c", Value: []byte(id)}}); err != nil {
						t.Errorf("PutWrites %s/%s: %v", thread, id, err)
						return
					}
					saved, err := s.Get(t.Context(), ref)
					if err != nil {
						t.Errorf("Get %s/%s: %v", thread, id, err)
						return
					}
					if len(saved.Blobs) != 1 || string(saved.Blobs[0].Data) != thread+id || len(saved.Writes) != 1 {
						t.Errorf("Get %s/%s: blobs %s, writes %s", thread, id, blobString(saved.Blobs), writeString(saved.Writes))
					}
				}
				if _, err := s.List(t.Context(), graph.ListOptions{ThreadID: "shared", Limit: 3}); err != nil {
					t.Errorf("List: %v", err)
				}
			}
		})
	}
	wg.Wait()

	for w := range workers {
		list, err := s.List(t.Context(), graph.ListOptions{ThreadID: fmt.Sprintf("worker-%d", w)})
		if err != nil || len(list) != steps {
			t.Errorf("List worker-%d: %d checkpoints, %v; want %d", w, len(list), err, steps)
		}
	}
	list, err := s.List(t.Context(), graph.ListOptions{ThreadID: "shared"})
	if err != nil || len(list) != workers*steps {
		t.Fatalf("List shared: %d checkpoints, %v; want %d", len(list), err, workers*steps)
	}
	if !slices.IsSortedFunc(list, func(a, b graph.Checkpoint) int { return cmp.Compare(b.ID, a.ID) }) {
		t.Errorf("List shared is not newest first: %v", ids(list))
	}
}

func testNoAliasing(t *testing.T, s graph.Checkpointer) {
	cp := checkpoint("01", map[string]string{"f": "1"})
	cp.Tasks = []graph.TaskSpec{{ID: "a", Node: "n", Input: json.RawMessage(`{"k":1}`)}}
	cp.Barriers = map[string][]string{"j": {"x"}}
	cp.InterruptedAfter = []string{"n"}
	want := cp
	want.Tasks = slices.Clone(cp.Tasks)
	want.Tasks[0].Input = slices.Clone(cp.Tasks[0].Input)
	want.Versions = map[string]string{"f": "1"}
	want.Barriers = map[string][]string{"j": {"x"}}
	want.InterruptedAfter = []string{"n"}

	data := []byte("data")
	value := []byte("value")
	put(t, s, cp, graph.Blob{Field: "f", Version: "1", Data: data})
	putWrites(t, s, graph.Ref{ThreadID: "t", ID: "01"}, graph.Write{TaskID: "a", Channel: "X", Value: value})

	// The caller reuses its buffers and maps after Put.
	data[0], value[0] = 'X', 'X'
	cp.Tasks[0].Input[2] = 'X'
	cp.Versions["f"] = "changed"
	cp.Barriers["j"][0] = "changed"
	cp.InterruptedAfter[0] = "changed"

	first := get(t, s, graph.Ref{ThreadID: "t", ID: "01"})
	checkCheckpoint(t, first.Checkpoint, want)
	checkBlobs(t, "after mutating Put's input", first.Blobs, blob("f", "1", "data"))
	checkWrites(t, "after mutating PutWrites' input", first.Writes, graph.Write{TaskID: "a", Channel: "X", Value: []byte("value")})

	// And it edits what Get returned.
	if len(first.Blobs) == 1 && len(first.Writes) == 1 && len(first.Checkpoint.Tasks) == 1 {
		first.Blobs[0].Data[0] = 'X'
		first.Writes[0].Value[0] = 'X'
		first.Checkpoint.Tasks[0].Input[2] = 'X'
		first.Checkpoint.Versions["f"] = "changed"
	}
	second := get(t, s, graph.Ref{ThreadID: "t", ID: "01"})
	checkCheckpoint(t, second.Checkpoint, want)
	checkBlobs(t, "after mutating Get's result", second.Blobs, blob("f", "1", "data"))
	if len(second.Writes) != 1 || !bytes.Equal(second.Writes[0].Value, []byte("value")) {
		t.Errorf("after mutating Get's result: writes %s", writeString(second.Writes))
	}
}

// A run that is cancelled must not go on to store or load anything.
func testCanceledContext(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("01", nil))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ref := graph.Ref{ThreadID: "t", ID: "01"}
	for name, call := range map[string]func() error{
		"Put":       func() error { return s.Put(ctx, checkpoint("02", nil), nil) },
		"PutWrites": func() error { return s.PutWrites(ctx, ref, []graph.Write{{TaskID: "a", Channel: "X"}}) },
		"Get": func() error {
			_, err := s.Get(ctx, ref)
			return err
		},
		"List": func() error {
			_, err := s.List(ctx, graph.ListOptions{ThreadID: "t"})
			return err
		},
		"DeleteThread": func() error { return s.DeleteThread(ctx, "t") },
	} {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context = %v, want an error matching context.Canceled", name, err)
		}
	}
	saved := get(t, s, graph.Ref{ThreadID: "t"})
	if saved.Checkpoint.ID != "01" || len(saved.Writes) != 0 {
		t.Errorf("after cancelled calls: latest %s with %d writes, want 01 with none", saved.Checkpoint.ID, len(saved.Writes))
	}
}
