package groupcommit

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"
)

// TestBatchFailureRollsBackOnlyItsOwnWrites runs one batch directly, so
// its make-up is certain: a function failing after it wrote, and a
// constraint error, beside functions that succeed.
func TestBatchFailureRollsBackOnlyItsOwnWrites(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "b.db")+"?_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	w, err := New(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	insert := func(k string) func(context.Context, *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO t (k) VALUES (?)`, k)
			return err
		}
	}
	errBoom := errors.New("boom")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ops := []*op{
		{ctx: context.Background(), fn: insert("a")},
		{ctx: context.Background(), fn: func(ctx context.Context, tx *sql.Tx) error {
			if err := insert("b")(ctx, tx); err != nil {
				return err
			}
			return errBoom
		}},
		{ctx: context.Background(), fn: insert("a")},
		{ctx: cancelled, fn: insert("c")},
		{ctx: context.Background(), fn: insert("d")},
	}
	for _, o := range ops {
		o.err = make(chan error, 1)
	}
	w.run(ops)
	got := make([]error, len(ops))
	for i, o := range ops {
		got[i] = <-o.err
	}
	if got[0] != nil || got[4] != nil {
		t.Errorf("succeeding functions: %v, %v", got[0], got[4])
	}
	if !errors.Is(got[1], errBoom) {
		t.Errorf("failing function: %v, want its own error", got[1])
	}
	if got[2] == nil {
		t.Error("the duplicate insert succeeded")
	}
	if !errors.Is(got[3], context.Canceled) {
		t.Errorf("cancelled function: %v, want context.Canceled", got[3])
	}
	rows, err := db.Query(`SELECT k FROM t ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		_ = rows.Scan(&k)
		keys = append(keys, k)
	}
	if len(keys) != 2 || keys[0] != "a" || keys[1] != "d" {
		t.Errorf("rows %v, want [a d]", keys)
	}
}
