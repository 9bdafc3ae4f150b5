package sqlitetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/trellis-ai/trellis/store/sqlitestore"
)

var (
	once     sync.Once
	migrated []byte
	failed   error
)

// Fresh writes at path, which must not exist, the file of a database as
// sqlitestore.Open leaves a new one, migrated: a copy of one migrated
// once a process. It returns path.
func Fresh(t testing.TB, path string) string {
	t.Helper()
	once.Do(func() { migrated, failed = migrate() })
	if failed != nil {
		t.Fatalf("sqlitetest: %v", failed)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		_, err = f.Write(migrated)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatalf("sqlitetest: %v", err)
	}
	return path
}

// migrate opens a new database, which migrates it, and returns its file
// once closed: the last connection's close checkpoints the write-ahead
// log into it.
func migrate() ([]byte, error) {
	dir, err := os.MkdirTemp("", "sqlitetest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "trellis.db")
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
