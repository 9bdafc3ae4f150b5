package groupcommit_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/trellis-ai/trellis/internal/groupcommit"
)

func open(t *testing.T) (*sql.DB, *groupcommit.Writer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "g.db")
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	w, err := groupcommit.New(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Close()
		db.Close()
	})
	return db, w
}

func insert(k string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO t (k) VALUES (?)`, k)
		return err
	}
}

func keys(t *testing.T, db *sql.DB) map[string]bool {
	t.Helper()
	rows, err := db.Query(`SELECT k FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		out[k] = true
	}
	return out
}

// hold makes the writer busy with a function that waits for release, so
// that whatever is sent meanwhile forms the next batch.
func hold(t *testing.T, w *groupcommit.Writer) (release func(), done <-chan error) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- w.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			close(started)
			<-gate
			return nil
		})
	}()
	<-started
	return func() { close(gate) }, errc
}

func TestConcurrentWritesAllCommitBeforeDoReturns(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // runs after open's cleanup closed the writer
	db, w := open(t)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			k := fmt.Sprint(i)
			if err := w.Do(t.Context(), insert(k)); err != nil {
				t.Error(err)
				return
			}
			// Committed: another connection sees it at once.
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM t WHERE k = ?`, k).Scan(&n); err != nil || n != 1 {
				t.Errorf("key %s after Do: count %d, %v", k, n, err)
			}
		})
	}
	wg.Wait()
	if got := len(keys(t, db)); got != 100 {
		t.Fatalf("%d rows, want 100", got)
	}
}

func TestCancelledBeforeItsTurnDoesNotRun(t *testing.T) {
	_, w := open(t)
	release, held := hold(t, w)
	ctx, cancel := context.WithCancel(context.Background())
	ran := false
	errc := make(chan error, 1)
	go func() {
		errc <- w.Do(ctx, func(context.Context, *sql.Tx) error { ran = true; return nil })
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
	release()
	<-held
	if ran {
		t.Fatal("a function whose caller gave up ran")
	}
}

func TestCancellingTheCallerDoesNotInterruptItsFunction(t *testing.T) {
	db, w := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	err := w.Do(ctx, func(fctx context.Context, tx *sql.Tx) error {
		cancel()
		if fctx.Err() != nil {
			return fmt.Errorf("the function's context was cancelled: %w", fctx.Err())
		}
		return insert("x")(fctx, tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !keys(t, db)["x"] {
		t.Fatal("the write of a function whose caller cancelled was lost")
	}
}

func TestClosed(t *testing.T) {
	_, w := open(t)
	w.Close()
	w.Close()
	if err := w.Do(t.Context(), insert("z")); !errors.Is(err, groupcommit.ErrClosed) {
		t.Fatalf("Do after Close = %v, want ErrClosed", err)
	}
}
