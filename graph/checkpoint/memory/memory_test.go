package memory_test

import (
	"fmt"
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
