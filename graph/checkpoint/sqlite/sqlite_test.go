package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/checkpointtest"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
)

// open opens a database file of the test's own and closes it at cleanup.
// A file, not ":memory:", so the pool's connections share one database.
func open(t testing.TB, path string) *sqlite.Saver {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) graph.Checkpointer {
		return open(t, filepath.Join(t.TempDir(), "checkpoints.db"))
	})
}

func TestConformanceInMemory(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) graph.Checkpointer { return open(t, ":memory:") })
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	cp := graph.Checkpoint{ThreadID: "t", ID: "01", Source: graph.SourceInput, CreatedAt: time.Now(), Versions: map[string]string{"f": "1"}}
	blob := graph.Blob{Field: "f", Version: "1", Data: []byte("kept")}

	first, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Put(t.Context(), cp, []graph.Blob{blob}); err != nil {
		t.Fatal(err)
	}
	if err := first.PutWrites(t.Context(), graph.Ref{ThreadID: "t", ID: "01"}, []graph.Write{{TaskID: "a", Channel: "X", Value: []byte("w")}}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	// Opening again runs the migrator over an up-to-date schema, twice.
	open(t, path)
	second := open(t, path)
	saved, err := second.Get(t.Context(), graph.Ref{ThreadID: "t"})
	if err != nil {
		t.Fatalf("Get after reopen: %v", err)
	}
	if saved.Checkpoint.ID != "01" || len(saved.Blobs) != 1 || string(saved.Blobs[0].Data) != "kept" ||
		len(saved.Writes) != 1 || string(saved.Writes[0].Value) != "w" {
		t.Errorf("after reopen: checkpoint %s, blobs %+v, writes %+v", saved.Checkpoint.ID, saved.Blobs, saved.Writes)
	}
}

// Several processes may open one file at once; each must either apply the
// migrations or see them applied.
func TestConcurrentOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			s, err := sqlite.Open(t.Context(), path)
			if err == nil {
				err = errors.Join(s.Put(t.Context(), graph.Checkpoint{ThreadID: "t", ID: "01"}, nil), s.Close())
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Open: %v", err)
		}
	}
}

func TestOpenBadPath(t *testing.T) {
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "missing", "dir", "x.db"))
	if err == nil {
		t.Fatal("Open in a missing directory succeeded")
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
	s := open(b, filepath.Join(b.TempDir(), "bench.db"))
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
	checkpointtest.BenchmarkPutAnswer(b, open(b, filepath.Join(b.TempDir(), "bench.db")), 16, 1000)
}

func BenchmarkGet(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "bench.db"))
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
