package apitest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
	"github.com/trellis-ai/trellis/store/sqlitestore/sqlitetest"
)

// Stores opens a fresh record and checkpointer on backend, "sqlite" (files
// in a temporary directory) or "postgres" (a fresh schema of the test
// database, skipped without one), closed when the test ends. Cleanups
// run last first, so a server a test starts after them stops before
// they close.
func Stores(t testing.TB, backend string) (store.Store, graph.Checkpointer) {
	t.Helper()
	ctx := context.Background()
	if backend == "postgres" {
		pool := pgtest.New(t)
		st, err := pgstore.New(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		saver, err := postgres.New(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { saver.Close() })
		return st, saver
	}
	dir := t.TempDir()
	st, err := sqlitestore.Open(ctx, sqlitetest.Fresh(t, filepath.Join(dir, "trellis.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	saver, err := sqlite.Open(ctx, filepath.Join(dir, "checkpoints.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { saver.Close() })
	return st, saver
}
