package sqlopen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

func openCached(t testing.TB) *sql.DB {
	t.Helper()
	db, err := SQLite(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// cacheOf runs fn in a transaction on one connection of db, with that
// connection's statement cache, which fn reads between the
// transaction's calls.
func cacheOf(t *testing.T, db *sql.DB, fn func(tx *sql.Tx, c *cachingConn)) {
	t.Helper()
	ctx := t.Context()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var c *cachingConn
	if err := conn.Raw(func(dc any) error { c = dc.(*cachingConn); return nil }); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	fn(tx, c)
}

// A query run by its text is prepared once per connection and then
// reused; one without arguments is not kept.
func TestStatementsArePreparedOnce(t *testing.T) {
	db := openCached(t)
	cacheOf(t, db, func(tx *sql.Tx, c *cachingConn) {
		ctx := t.Context()
		const insert = `INSERT INTO kv (k, v) VALUES (?, ?)`
		for i := range 3 {
			if _, err := tx.ExecContext(ctx, insert, i, fmt.Sprint("v", i)); err != nil {
				t.Fatal(err)
			}
		}
		first := c.stmts[insert]
		if first == nil {
			t.Fatal("the insert is not cached")
		}
		if _, err := tx.ExecContext(ctx, insert, 10, "v10"); err != nil {
			t.Fatal(err)
		}
		if c.stmts[insert] != first {
			t.Error("the insert was prepared again")
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM kv WHERE k = 10`); err != nil {
			t.Fatal(err)
		}
		if len(c.stmts) != 1 {
			t.Errorf("%d statements cached, want the insert only", len(c.stmts))
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM kv WHERE k < ?`, 100).Scan(&n); err != nil || n != 3 {
			t.Fatalf("count = %d, %v; want 3", n, err)
		}
	})
}

// The same query run again while its rows are still being read runs on
// a statement of its own, and neither result is disturbed.
func TestStatementOpenWhileRunAgain(t *testing.T) {
	db := openCached(t)
	cacheOf(t, db, func(tx *sql.Tx, c *cachingConn) {
		ctx := t.Context()
		for i := range 5 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, ?)`, i, fmt.Sprint("v", i)); err != nil {
				t.Fatal(err)
			}
		}
		const q = `SELECT k FROM kv WHERE k >= ? ORDER BY k`
		outer, err := tx.QueryContext(ctx, q, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for outer.Next() {
			var k int
			if err := outer.Scan(&k); err != nil {
				t.Fatal(err)
			}
			var inner []int
			rows, err := tx.QueryContext(ctx, q, k)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var j int
				if err := rows.Scan(&j); err != nil {
					t.Fatal(err)
				}
				inner = append(inner, j)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprint(k, inner))
		}
		if err := outer.Err(); err != nil {
			t.Fatal(err)
		}
		outer.Close()
		want := "[0 [0 1 2 3 4] 1 [1 2 3 4] 2 [2 3 4] 3 [3 4] 4 [4]]"
		if fmt.Sprint(got) != want {
			t.Errorf("got %v, want %s", got, want)
		}
		if s := c.stmts[q]; s == nil || s.open {
			t.Errorf("the query's statement is not cached and free after its rows closed: %+v", s)
		}
	})
}

// The cache keeps at most CachedStatements statements, evicting the
// least recently used but never one whose rows are open, and an evicted
// query still runs.
func TestStatementCacheIsBounded(t *testing.T) {
	db := openCached(t)
	cacheOf(t, db, func(tx *sql.Tx, c *cachingConn) {
		ctx := t.Context()
		query := func(i int) string { return fmt.Sprintf(`SELECT ? + %d`, i) }
		held, err := tx.QueryContext(ctx, query(0), 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3*CachedStatements; i++ {
			var n int
			if err := tx.QueryRowContext(ctx, query(i), 1).Scan(&n); err != nil || n != i+1 {
				t.Fatalf("query %d = %d, %v", i, n, err)
			}
			if len(c.stmts) > CachedStatements {
				t.Fatalf("%d statements cached, more than %d", len(c.stmts), CachedStatements)
			}
		}
		if s := c.stmts[query(0)]; s == nil || !s.open {
			t.Error("the statement whose rows are open was evicted")
		}
		if _, ok := c.stmts[query(1)]; ok {
			t.Error("the least recently used statement is still cached")
		}
		if !held.Next() {
			t.Fatal(held.Err())
		}
		var n int
		if err := held.Scan(&n); err != nil || n != 1 {
			t.Fatalf("held query = %d, %v", n, err)
		}
		held.Close()
		if err := tx.QueryRowContext(ctx, query(1), 1).Scan(&n); err != nil || n != 2 {
			t.Fatalf("evicted query again = %d, %v", n, err)
		}
	})
}

// Errors come from the driver as they would unprepared: a query that
// cannot be prepared reports its own error, and a constraint is still
// the driver's *Error, so stores keep telling conflicts apart. A failed
// statement runs again.
func TestStatementCacheErrors(t *testing.T) {
	db := openCached(t)
	ctx := t.Context()
	_, err := db.ExecContext(ctx, `INSERT INTO nowhere VALUES (?)`, 1)
	if err == nil || !strings.Contains(err.Error(), "no such table: nowhere") {
		t.Errorf("unpreparable query: %v", err)
	}
	const insert = `INSERT INTO kv (k, v) VALUES (?, ?)`
	if _, err := db.ExecContext(ctx, insert, 1, "a"); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, insert, 1, "b")
	e, ok := errors.AsType[*msqlite.Error](err)
	if !ok || e.Code() != sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
		t.Errorf("duplicate key: %v, want the driver's primary key constraint error", err)
	}
	if _, err := db.ExecContext(ctx, insert, 2, "b"); err != nil {
		t.Errorf("the statement after its failure: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.ExecContext(cctx, insert, 3, "c"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM kv WHERE k > ?`, 0).Scan(&n); err != nil || n != 2 {
		t.Errorf("rows = %d, %v; want 2", n, err)
	}
}
