package sqlopen_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// A writer commits each number to a, then to b, in transactions of
// their own, as the service writes its checkpoints and then its record.
// Every backup taken while it writes holds the two as they were at one
// instant: b has the number a has, or the one before it. Copied one
// after the other instead, b would run ahead of a.
func TestBackupIsOneInstant(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) *sql.DB {
		db, err := sqlopen.SQLite(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.Exec("CREATE TABLE n (v INTEGER NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		return db
	}
	a, b := open("a.db"), open("b.db")
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		for v := 1; ctx.Err() == nil; v++ {
			for _, db := range []*sql.DB{a, b} {
				if _, err := db.ExecContext(ctx, "INSERT INTO n (v) VALUES (?)", v); err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		}
	})
	defer func() { stop(); wg.Wait() }()
	last := func(path string) int {
		db, err := sqlopen.SQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v int
		if err := db.QueryRow("SELECT coalesce(max(v), 0) FROM n").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	moved := false
	for i := range 20 {
		out := filepath.Join(dir, fmt.Sprint("backup", i))
		if err := os.Mkdir(out, 0o700); err != nil {
			t.Fatal(err)
		}
		cs := []sqlopen.Copy{{From: filepath.Join(dir, "b.db"), To: filepath.Join(out, "b.db")}, {From: filepath.Join(dir, "a.db"), To: filepath.Join(out, "a.db")}}
		if err := sqlopen.Backup(t.Context(), cs); err != nil {
			t.Fatal(err)
		}
		va, vb := last(cs[1].To), last(cs[0].To)
		if va != vb && va != vb+1 {
			t.Fatalf("backup %d: a at %d, b at %d: not one instant", i, va, vb)
		}
		moved = moved || va > 0
	}
	if !moved {
		t.Fatal("the writer wrote nothing while the backups ran")
	}
}

// A backup refuses a destination that exists, and a source that does
// not; a copy that is not a database fails its check.
func TestBackupRefuses(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlopen.SQLite(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE n (v INTEGER)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	taken := filepath.Join(dir, "taken.db")
	if err := os.WriteFile(taken, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []sqlopen.Copy{
		{From: filepath.Join(dir, "a.db"), To: taken},
		{From: filepath.Join(dir, "missing.db"), To: filepath.Join(dir, "out.db")},
	} {
		if err := sqlopen.Backup(t.Context(), []sqlopen.Copy{c}); err == nil {
			t.Errorf("backup of %s to %s: no error", c.From, c.To)
		}
	}
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte("this is not a database, not at all, no"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sqlopen.Check(t.Context(), garbage); err == nil {
		t.Error("a file that is not a database passed its check")
	}
}
