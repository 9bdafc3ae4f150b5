package sqlopen_test

import (
	"path/filepath"
	"strconv"
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
				"journal_mode": tc.journalMode, "synchronous": "1", "foreign_keys": "1",
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
