package sqlitestore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/sqlitestore"
	"github.com/trellis-ai/trellis/api/store/storetest"
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
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "chat.db"))
	})
}

func TestConformanceInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, ":memory:") })
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
