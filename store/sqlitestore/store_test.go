package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/sqlitestore"
	"github.com/trellis-ai/trellis/store/sqlitestore/sqlitetest"
	"github.com/trellis-ai/trellis/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens a database of the test's own and closes it at cleanup.
func open(t testing.TB, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
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
	storetest.Run(t, func(t *testing.T) storetest.Record {
		return open(t, sqlitetest.Fresh(t, filepath.Join(t.TempDir(), "chat.db")))
	})
}

func TestConformanceInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Record { return open(t, ":memory:") })
}

// Two Stores on one file stand for two processes: the rules hold across
// them, and reopening keeps the data.
func TestSharedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.db")
	a, b := open(t, path), open(t, path)
	ctx := t.Context()
	c, err := a.CreateConversation(ctx, store.NewConversation{UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.StartRun(ctx, store.NewRun{UserID: "u", ConversationID: c.ID, UserMessage: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.StartRun(ctx, store.NewRun{UserID: "u", ConversationID: c.ID, UserMessage: "again"}); !errors.Is(err, store.ErrRunActive) {
		t.Errorf("StartRun through the second handle: %v, want ErrRunActive", err)
	}
	storetest.AppendConcurrently(t, []store.Store{a, b}, r)

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := open(t, path)
	if got, err := reopened.GetRun(ctx, "u", r.ID); err != nil || got.LastSeq != 200 {
		t.Errorf("after reopening: run %+v, %v; want its 200 events", got, err)
	}
}

// Several processes may open one file at once; each must either apply the
// migrations or see them applied.
func TestConcurrentOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.db")
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			s, err := sqlitestore.Open(t.Context(), path)
			if err == nil {
				err = errors.Join(s.Ping(t.Context()), s.Close())
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
	if _, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "missing", "x.db")); err == nil {
		t.Fatal("Open in a missing directory succeeded")
	}
}

func BenchmarkAppendEvent(b *testing.B) {
	storetest.BenchmarkAppendEvent(b, open(b, filepath.Join(b.TempDir(), "bench.db")))
}

func BenchmarkAppendEventParallel(b *testing.B) {
	storetest.BenchmarkAppendEventParallel(b, open(b, filepath.Join(b.TempDir(), "bench.db")))
}

func BenchmarkReplay(b *testing.B) {
	storetest.BenchmarkReplay(b, open(b, filepath.Join(b.TempDir(), "bench.db")))
}

func newDocStore(t testing.TB) *sqlitestore.Store {
	return open(t, sqlitetest.Fresh(t, filepath.Join(t.TempDir(), "docs.db")))
}

// The FTS5 index follows the chunks through every way they go: replaced,
// deleted with their document, cascaded from their conversation. FTS5's
// integrity check compares the index with the chunks' text.
func TestChunkIndexIntegrity(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "fts.db")
	s := open(t, path)
	var docs []store.Document
	for i := range 3 {
		c, err := s.CreateConversation(ctx, store.NewConversation{UserID: "u"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.CreateDocument(ctx, store.NewDocument{UserID: "u", ConversationID: c.ID, Filename: "f", ContentType: "text/plain"})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // put twice: the second replaces the first
			if err := s.PutChunks(ctx, d.ID, []store.NewChunk{{Index: 0, End: 5, Text: fmt.Sprintf("words %d", i)}, {Index: 1, End: 5, Text: "more words"}}, 0); err != nil {
				t.Fatal(err)
			}
		}
		docs = append(docs, d)
	}
	if _, err := s.DeleteDocument(ctx, "u", docs[0].ConversationID, docs[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConversation(ctx, "u", docs[1].ConversationID); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Fatalf("FTS5 index out of step with the chunks: %v", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'words'`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("index rows matching: %d, %v; want the 2 of the document left", n, err)
	}
}

func BenchmarkSearchChunks(b *testing.B) { storetest.BenchmarkSearchChunks(b, newDocStore(b), nil) }

func BenchmarkSearchMemories(b *testing.B) { storetest.BenchmarkSearchMemories(b, newDocStore(b)) }

// Runs stored before runs.parent_id existed get their parents from the
// migration that added it.
func TestBranchesBackfilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.db")
	s := open(t, path)
	storetest.BranchesBackfilled(t, s, func() {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(t.Context(), "UPDATE runs SET parent_id = ''"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(t.Context(), storetest.ParentsBackfill(t, "migrations/0016_run_parents.sql")); err != nil {
			t.Fatal(err)
		}
	})
}

// A record that the code before migration 0031 wrote, one row per event,
// reads, replays, resumes and compacts (see storetest.RunLegacy).
func TestLegacyEventRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.db")
	db, err := os.ReadFile("testdata/legacy-0030.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/legacy-0030.json")
	if err != nil {
		t.Fatal(err)
	}
	storetest.RunLegacy(t, open(t, path), golden)
}
