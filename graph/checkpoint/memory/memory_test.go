package memory_test

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/checkpointtest"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
)

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) graph.Checkpointer { return memory.New() })
}

// benchCheckpoint is the shape the engine writes after a typical superstep:
// a few fields, one of which changed, and one planned task.
func benchCheckpoint() (graph.Checkpoint, []graph.Blob) {
	cp := graph.Checkpoint{
		ThreadID:  "bench",
		ID:        "0001",
		Step:      1,
		Source:    graph.SourceLoop,
		CreatedAt: time.Now(),
		Versions:  map[string]string{"Messages": "0001", "Count": "1", "Done": "1"},
		Tasks:     []graph.TaskSpec{{ID: "task-1", Node: "agent"}},
	}
	return cp, []graph.Blob{{Field: "Messages", Version: "0001", Data: []byte(`[{"role":"user","content":"hello"}]`)}}
}

// BenchmarkPut measures one superstep's Put. Runs of 100 steps each get a
// thread that is deleted after the next run, so the store stays the size a
// busy process keeps rather than growing with b.N.
func BenchmarkPut(b *testing.B) {
	const stepsPerRun = 100
	s := memory.New()
	ctx := b.Context()
	cp, blobs := benchCheckpoint()
	ids := make([]string, stepsPerRun)
	threads := make([]string, 64)
	for i := range ids {
		ids[i] = fmt.Sprintf("%04d", i)
	}
	for i := range threads {
		threads[i] = fmt.Sprintf("bench-%d", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		run, step := i/stepsPerRun, i%stepsPerRun
		if step == 0 && run >= 2 {
			if err := s.DeleteThread(ctx, threads[(run-2)%len(threads)]); err != nil {
				b.Fatal(err)
			}
		}
		// Put copies what it keeps, so reusing cp and blobs is allowed.
		cp.ThreadID, cp.ID, cp.Step = threads[run%len(threads)], ids[step], step
		cp.Versions["Messages"], blobs[0].Version = ids[step], ids[step]
		if err := s.Put(ctx, cp, blobs); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkGet(b *testing.B) {
	s := memory.New()
	ctx := b.Context()
	cp, blobs := benchCheckpoint()
	if err := s.Put(ctx, cp, blobs); err != nil {
		b.Fatal(err)
	}
	ref := graph.Ref{ThreadID: "bench"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, ref); err != nil {
			b.Fatal(err)
		}
	}
}

// The saver stores versions as deltas from the checkpoint before; every
// checkpoint must still read back with exactly the versions it was put
// with, through long chains, removed fields, replaced and inserted
// checkpoints.
func TestVersionsRoundTrip(t *testing.T) {
	s := memory.New()
	ctx := t.Context()
	want := map[string]map[string]string{}
	put := func(id string, versions map[string]string) {
		t.Helper()
		cp := graph.Checkpoint{ThreadID: "t", ID: id, Step: 1, Source: graph.SourceLoop, CreatedAt: time.Now(), Versions: versions}
		if err := s.Put(ctx, cp, nil); err != nil {
			t.Fatal(err)
		}
		want[id] = maps.Clone(versions)
	}
	versions := map[string]string{}
	for i := range 40 {
		id := fmt.Sprintf("%04d", 10*i)
		versions[fmt.Sprintf("f%d", i%7)] = id // a few fields change each step
		if i%5 == 0 {
			versions["every5"] = id
		}
		switch i {
		case 12:
			delete(versions, "every5") // a field goes away: no delta can say so
		case 20:
			versions = map[string]string{} // all of them
		}
		put(id, maps.Clone(versions))
	}
	put("0395", map[string]string{"inserted": "0395"})               // between two others
	put("0390", map[string]string{"f0": "0390", "replaced": "0390"}) // replaces the newest
	put("0400", map[string]string{"f0": "0400", "replaced": "0390"}) // a delta from the replacement
	put("0001", map[string]string{"f1": "0001"})                     // before all others

	list, err := s.List(ctx, graph.ListOptions{ThreadID: "t"})
	if err != nil || len(list) != len(want) {
		t.Fatalf("List: %d checkpoints, %v; want %d", len(list), err, len(want))
	}
	for _, cp := range list {
		if !maps.Equal(cp.Versions, want[cp.ID]) {
			t.Errorf("List: checkpoint %s versions %v, want %v", cp.ID, cp.Versions, want[cp.ID])
		}
		saved, err := s.Get(ctx, graph.Ref{ThreadID: "t", ID: cp.ID})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(saved.Checkpoint.Versions, want[cp.ID]) {
			t.Errorf("Get: checkpoint %s versions %v, want %v", cp.ID, saved.Checkpoint.Versions, want[cp.ID])
		}
	}
}

// BenchmarkPutWide is a superstep of a wide state, such as the agent's
// ChatState: 30 field versions, two of which change per step, on threads
// of 20 steps.
func BenchmarkPutWide(b *testing.B) {
	const fields, stepsPerRun = 30, 20
	s := memory.New()
	ctx := b.Context()
	names := make([]string, fields)
	for i := range names {
		names[i] = fmt.Sprintf("Field%d", i)
	}
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%016x", i)
	}
	threads := make([]string, 64)
	for i := range threads {
		threads[i] = fmt.Sprintf("bench-%d", i)
	}
	b.ReportAllocs()
	i := 0
	var versions map[string]string
	for b.Loop() {
		run, step := i/stepsPerRun, i%stepsPerRun
		if step == 0 {
			if run >= 2 {
				if err := s.DeleteThread(ctx, threads[(run-2)%len(threads)]); err != nil {
					b.Fatal(err)
				}
			}
			versions = make(map[string]string, fields)
			for _, n := range names {
				versions[n] = ids[0]
			}
		}
		id := ids[step+1]
		versions[names[step%fields]], versions[names[(7*step+3)%fields]] = id, id
		cp := graph.Checkpoint{ThreadID: threads[run%len(threads)], ID: id, Step: step, Source: graph.SourceLoop, Versions: versions}
		if err := s.Put(ctx, cp, []graph.Blob{{Field: names[step%fields], Version: id, Data: []byte(`"x"`)}}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// The saver packs versions and blobs into one string per checkpoint; odd
// strings and long ones (multi-byte lengths) must come back as they went
// in, also when the checkpoint is put again.
func TestPackedRoundTrip(t *testing.T) {
	s := memory.New()
	ctx := t.Context()
	long := strings.Repeat("é", 200)
	f127, f128 := strings.Repeat("a", 127), strings.Repeat("b", 128) // one- and two-byte lengths
	versions := map[string]string{"": "empty field", long: "0002", "f\x00g": "", "Messages": "0002", f127: "0002", f128: "0002"}
	blobs := []graph.Blob{
		{Field: long, Version: "0002", Data: []byte(strings.Repeat("x", 300))},
		{Field: f127, Version: "0002", Data: []byte(strings.Repeat("y", 1<<14))},
		{Field: f128, Version: "0002", Data: []byte(strings.Repeat("z", 1<<14-1))},
		{Field: "Messages", Version: "0002", Delta: true, Base: "0001", Data: []byte(`["m"]`)},
		{Field: "", Version: "empty field"}, // loose, no data
		{Field: "f\x00g", Version: "", Data: []byte{0, 1, 2}},
	}
	cp := graph.Checkpoint{ThreadID: "t", ID: "0002", Step: 2, Source: graph.SourceLoop, CreatedAt: time.Now(), Versions: versions}
	if err := s.Put(ctx, cp, blobs); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		saved, err := s.Get(ctx, graph.Ref{ThreadID: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(saved.Checkpoint.Versions, versions) {
			t.Errorf("%s: versions %q, want %q", what, saved.Checkpoint.Versions, versions)
		}
		// Messages' delta names base 0001, which nobody stored: the chain
		// ends there.
		want := map[string]graph.Blob{}
		for _, b := range blobs {
			if len(b.Data) == 0 {
				b.Data = nil
			}
			want[b.Field+"@"+b.Version] = b
		}
		if len(saved.Blobs) != len(want) {
			t.Errorf("%s: %d blobs, want %d", what, len(saved.Blobs), len(want))
		}
		for _, b := range saved.Blobs {
			w, ok := want[b.Field+"@"+b.Version]
			if !ok || w.Delta != b.Delta || w.Base != b.Base || !bytes.Equal(w.Data, b.Data) || (w.Data == nil) != (b.Data == nil) {
				t.Errorf("%s: blob %q@%q = %+v, want %+v", what, b.Field, b.Version, b, w)
			}
		}
	}
	check("put")
	// Put again with other bytes for the same versions, and one blob more:
	// the first values stay, the new blob is added.
	again := []graph.Blob{{Field: "Messages", Version: "0002", Data: []byte("other")}, {Field: "New", Version: "0002", Data: []byte("1")}}
	versions["New"] = "0002"
	if err := s.Put(ctx, cp, again); err != nil {
		t.Fatal(err)
	}
	blobs = append(blobs, again[1])
	check("put again")
}
