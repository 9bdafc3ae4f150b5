package sqlopen_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// Every connection gets the settings the package doc promises, with one
// busy timeout; an in-memory database is held on one connection.
func TestSQLite(t *testing.T) {
	for _, tc := range []struct {
		name, path  string
		oneConn     bool
		journalMode string
	}{
		{"file", filepath.Join(t.TempDir(), "x.db"), false, "wal"},
		{"file with a query", "file:" + filepath.Join(t.TempDir(), "y.db") + "?cache=private", false, "wal"},
		{"memory", ":memory:", true, "memory"}, // an in-memory database has no WAL
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := sqlopen.SQLite(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			want := map[string]string{
				"busy_timeout": strconv.FormatInt(sqlopen.BusyTimeout.Milliseconds(), 10),
				"journal_mode": tc.journalMode, "synchronous": "1", "foreign_keys": "1", "secure_delete": "1",
				"temp_store": "2", // MEMORY
			}
			for pragma, w := range want {
				var got string
				if err := db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != w {
					t.Errorf("PRAGMA %s = %s, want %s", pragma, got, w)
				}
			}
			most := sqlopen.MaxOpenConns
			if tc.oneConn {
				most = 1
			}
			if n := db.Stats().MaxOpenConnections; n != most {
				t.Errorf("pool holds at most %d connections, want %d", n, most)
			}
		})
	}
}

// What is deleted leaves no trace in the files: secure_delete zeroes it
// in the database, and TruncateWAL empties the log that held it.
func TestDeletedTextLeavesTheFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	db, err := sqlopen.SQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	const canary = "zqxcanary-6b2a873"
	for _, q := range []string{
		"CREATE TABLE t (v TEXT)",
		"INSERT INTO t VALUES ('" + strings.Repeat(canary+" ", 300) + "')",
		"INSERT INTO t VALUES ('kept')",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := sqlopen.TruncateWAL(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM t WHERE v <> 'kept'"); err != nil {
		t.Fatal(err)
	}
	if !inFiles(t, dir, canary) {
		t.Fatal("the canary is in no file before TruncateWAL: the test proves nothing")
	}
	if err := sqlopen.TruncateWAL(ctx, db); err != nil {
		t.Fatal(err)
	}
	if inFiles(t, dir, canary) {
		t.Error("deleted text is still in the files")
	}
}

// A reader using the log keeps TruncateWAL from emptying it: it says so
// after WALWait, not after BusyTimeout (while it waits nobody writes),
// and leaves the connection it used with the usual busy timeout. Once
// the reader is done, it empties the log.
func TestTruncateWALGivesUpSoon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := sqlopen.SQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // the connection TruncateWAL used is the one asked after
	ctx := t.Context()
	for _, q := range []string{"CREATE TABLE t (v TEXT)", "INSERT INTO t VALUES ('a')"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	other, err := sqlopen.SQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	reader, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	var n int
	if _, err := reader.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		t.Fatal(err)
	}
	if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	err = sqlopen.TruncateWAL(ctx, db)
	if !errors.Is(err, sqlopen.ErrWALBusy) {
		t.Fatalf("TruncateWAL under a reader: %v, want ErrWALBusy", err)
	}
	if d := time.Since(start); d > sqlopen.BusyTimeout/4 {
		t.Errorf("TruncateWAL waited %v for the reader", d)
	}
	var ms int64
	if err := db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&ms); err != nil || ms != sqlopen.BusyTimeout.Milliseconds() {
		t.Errorf("the connection's busy timeout after TruncateWAL: %d ms (%v), want %d", ms, err, sqlopen.BusyTimeout.Milliseconds())
	}

	if _, err := reader.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := sqlopen.TruncateWAL(ctx, db); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Errorf("the log after TruncateWAL: %v, %v", fi, err)
	}
}

// inFiles reports whether any file of dir holds s.
func inFiles(t *testing.T, dir, s string) bool {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}
