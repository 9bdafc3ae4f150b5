package postgres_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/checkpointtest"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/internal/pgtest"
)

func newSaver(t testing.TB) *postgres.Saver {
	t.Helper()
	s, err := postgres.New(t.Context(), pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) graph.Checkpointer { return newSaver(t) })
}

// New runs on every process start, often several at once; migrating an
// up-to-date schema must be a no-op, also concurrently.
func TestMigrateIdempotent(t *testing.T) {
	pool := pgtest.New(t)
	errs := make(chan error, 3)
	for range cap(errs) {
		go func() {
			_, err := postgres.New(t.Context(), pool)
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("concurrent New: %v", err)
		}
	}
	s, err := postgres.New(t.Context(), pool)
	if err != nil {
		t.Fatalf("New on a migrated schema: %v", err)
	}
	var n int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM checkpoint_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("checkpoint_migrations has %d rows, want 1", n)
	}
	if err := s.Put(t.Context(), graph.Checkpoint{ThreadID: "t", ID: "01"}, nil); err != nil {
		t.Errorf("Put after repeated New: %v", err)
	}
}

func benchCheckpoint(id string) (graph.Checkpoint, []graph.Blob) {
	cp := graph.Checkpoint{
		ThreadID:  "bench",
		ID:        id,
		Step:      1,
		Source:    graph.SourceLoop,
		CreatedAt: time.Now(),
		Versions:  map[string]string{"Messages": id, "Count": "1", "Done": "1"},
		Tasks:     []graph.TaskSpec{{ID: "task-1", Node: "agent"}},
	}
	return cp, []graph.Blob{{Field: "Messages", Version: id, Data: []byte(`[{"role":"user","content":"hello"}]`)}}
}

func BenchmarkPut(b *testing.B) {
	s := newSaver(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		cp, blobs := benchCheckpoint(fmt.Sprintf("%09d", i))
		if err := s.Put(b.Context(), cp, blobs); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPutAnswer stores the agent's answer checkpoint, ten changed
// fields, on sixteen threads of a thousand such checkpoints each.
func BenchmarkPutAnswer(b *testing.B) {
	checkpointtest.BenchmarkPutAnswer(b, newSaver(b), 16, 1000)
}

func BenchmarkGet(b *testing.B) {
	s := newSaver(b)
	for i := range 100 {
		cp, blobs := benchCheckpoint(fmt.Sprintf("%09d", i))
		if err := s.Put(b.Context(), cp, blobs); err != nil {
			b.Fatal(err)
		}
	}
	ref := graph.Ref{ThreadID: "bench"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(b.Context(), ref); err != nil {
			b.Fatal(err)
		}
	}
}

// A batch is one implicit transaction: when PostgreSQL refuses its
// second checkpoint (a NUL byte, which text cannot hold), the first is
// not stored either.
func TestPutBatchAllOrNone(t *testing.T) {
	s := newSaver(t)
	ok := graph.Checkpoint{ThreadID: "t", ID: "01", Source: graph.SourceInput, CreatedAt: time.Now()}
	bad := graph.Checkpoint{ThreadID: "t", ID: "02", ParentID: "01\x00", Source: graph.SourceLoop, CreatedAt: time.Now()}
	err := s.PutBatch(t.Context(), []graph.CheckpointPut{{Checkpoint: ok}, {Checkpoint: bad}})
	if err == nil || !strings.Contains(err.Error(), "02") {
		t.Fatalf("PutBatch = %v, want the second checkpoint's error", err)
	}
	if cps, err := s.List(t.Context(), graph.ListOptions{ThreadID: "t"}); err != nil || len(cps) != 0 {
		t.Errorf("after the refused batch: %d checkpoints (%v), want none", len(cps), err)
	}
	if err := s.PutBatch(t.Context(), []graph.CheckpointPut{{Checkpoint: ok}}); err != nil {
		t.Fatalf("the pool after a failed batch: %v", err)
	}
}
