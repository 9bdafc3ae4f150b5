package pgstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newStore(t testing.TB) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(t.Context(), pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Record { return newStore(t) })
}

// Two pools on one schema stand for two processes: the rules hold across
// them.
func TestTwoProcesses(t *testing.T) {
	pool := pgtest.New(t)
	a, err := pgstore.New(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	// A second pool on the same schema (the config carries the
	// search_path), as another process would have.
	other, err := pgxpool.NewWithConfig(t.Context(), pool.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	b, err := pgstore.New(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}

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
		t.Errorf("StartRun through the second process: %v, want ErrRunActive", err)
	}
	storetest.AppendConcurrently(t, []store.Store{a, b}, r)
}

// New runs on every process start, often several at once; migrating an
// up-to-date schema must be a no-op, also concurrently.
func TestMigrateIdempotent(t *testing.T) {
	pool := pgtest.New(t)
	errs := make(chan error, 3)
	for range cap(errs) {
		go func() {
			_, err := pgstore.New(t.Context(), pool)
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("concurrent New: %v", err)
		}
	}
	s, err := pgstore.New(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM chat_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if n != len(files) {
		t.Errorf("chat_migrations has %d rows, want one per migration, %d", n, len(files))
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping after repeated New: %v", err)
	}
	// Ping tells a schema whose migrations are gone.
	if _, err := pool.Exec(t.Context(), "DELETE FROM chat_migrations"); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Error("Ping succeeded with no migration recorded")
	}
}

func BenchmarkAppendEvent(b *testing.B) {
	storetest.BenchmarkAppendEvent(b, newStore(b))
}

func BenchmarkAppendEventParallel(b *testing.B) {
	storetest.BenchmarkAppendEventParallel(b, newStore(b))
}

func BenchmarkReplay(b *testing.B) {
	storetest.BenchmarkReplay(b, newStore(b))
}

func BenchmarkSearchChunks(b *testing.B) {
	pool := pgtest.New(b)
	s, err := pgstore.New(b.Context(), pool)
	if err != nil {
		b.Fatal(err)
	}
	storetest.BenchmarkSearchChunks(b, s, func() {
		if _, err := pool.Exec(b.Context(), "ANALYZE"); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkSearchMemories(b *testing.B) { storetest.BenchmarkSearchMemories(b, newStore(b)) }

// Runs stored before runs.parent_id existed get their parents from the
// migration that added it.
func TestBranchesBackfilled(t *testing.T) {
	pool := pgtest.New(t)
	s, err := pgstore.New(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	storetest.BranchesBackfilled(t, s, func() {
		if _, err := pool.Exec(t.Context(), "UPDATE runs SET parent_id = ''"); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(t.Context(), storetest.ParentsBackfill(t, "migrations/0019_run_parents.sql")); err != nil {
			t.Fatal(err)
		}
	})
}

// A record that the code before migration 0034 wrote, one row per event,
// reads, replays, resumes and compacts (see storetest.RunLegacy). The
// fixture is a dump of a schema named trellis_legacy, loaded here into
// the test's own.
func TestLegacyEventRows(t *testing.T) {
	pool := pgtest.New(t)
	dump, err := os.ReadFile("testdata/legacy-0033.sql")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/legacy-0033.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := pool.QueryRow(t.Context(), "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), strings.ReplaceAll(string(dump), "trellis_legacy", schema)); err != nil {
		t.Fatalf("load the fixture: %v", err)
	}
	s, err := pgstore.New(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	storetest.RunLegacy(t, s, golden)
}
