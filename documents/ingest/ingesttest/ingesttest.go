package ingesttest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
	"github.com/trellis-ai/trellis/store/sqlitestore/sqlitetest"
)

// Backends are the names New takes.
var Backends = []string{"sqlite", "postgres"}

// Rig is the document service and what it runs on.
type Rig struct {
	Svc   *ingest.Service
	Store ingest.Record
	Files documents.Storage
	Queue *jobs.Queue
}

// New builds the service on backend ("sqlite" in a temporary directory,
// "postgres" in a schema of its own) with cfg, whose Files and Store it
// sets, and starts its queue with jcfg, polling every 50 ms. Everything
// is stopped and closed when the test ends.
func New(t *testing.T, backend string, cfg ingest.Config, jcfg jobs.Config) *Rig {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	files, err := documents.NewFileStorage(filepath.Join(dir, "files"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Files = files
	var pool *pgxpool.Pool
	switch backend {
	case "sqlite":
		st, err := sqlitestore.Open(ctx, sqlitetest.Fresh(t, filepath.Join(dir, "trellis.db")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		cfg.Store = st
	case "postgres":
		pool = pgtest.New(t)
		st, err := pgstore.New(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Store = st
	default:
		t.Fatalf("ingesttest: no backend %q", backend)
	}
	svc, err := ingest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ws := jobs.NewWorkers()
	svc.Register(ws)
	jcfg.PollInterval = 50 * time.Millisecond
	var q *jobs.Queue
	if backend == "sqlite" {
		q, err = jobs.SQLite(ctx, filepath.Join(dir, "jobs.db"), ws, jcfg)
	} else {
		q, err = jobs.Postgres(ctx, pool, ws, jcfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	svc.Attach(q)
	if err := q.Start(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		q.Stop(sctx)
	})
	return &Rig{Svc: svc, Store: cfg.Store, Files: files, Queue: q}
}

// WaitStatus waits, 30 s at most, until the document has the status, and
// returns it as read then.
func WaitStatus(t *testing.T, svc *ingest.Service, d store.Document, want store.DocumentStatus) store.Document {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := svc.Get(t.Context(), d.UserID, d.ConversationID, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == want {
			return got
		}
		if (got.Status == store.DocError && want != store.DocError) || time.Now().After(deadline) {
			t.Fatalf("document is %s (%s), want %s", got.Status, got.Error, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
