package sqlitestore

import (
	"path/filepath"
	"testing"
)

// The package doc promises these settings on every connection; cascading
// deletes depend on foreign_keys.
func TestConnectionPragmas(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for pragma, want := range map[string]string{"journal_mode": "wal", "synchronous": "1", "foreign_keys": "1"} {
		var got string
		if err := s.db.db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}
