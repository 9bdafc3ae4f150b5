package sqlopen_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
