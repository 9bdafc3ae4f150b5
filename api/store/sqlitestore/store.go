package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/internal/sqlmigrate"
)

var _ store.Store = (*Store)(nil)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationTable records applied versions, named for this store so the
// checkpoint saver can share the database file.
const migrationTable = "chat_migrations"

// params are appended to every connection's DSN; see the package doc.
const params = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
	"&_pragma=foreign_keys(1)&_txlock=immediate"

// Store is a store.Store in one SQLite database file. It is safe for
// concurrent use, also by several processes sharing the file.
type Store struct {
	db *sql.DB
	// writer holds one token: a writing transaction takes it before
	// BEGIN IMMEDIATE, so this process's writers queue here instead of
	// polling SQLite's lock.
	writer chan struct{}
	// latest is the newest migration version; Ping checks it is applied.
	latest int
	// appendSeq and insertEvent are AppendEvent's statements, prepared
	// once: it runs for every event the service sends.
	appendSeq, insertEvent *sql.Stmt
}

// Open opens, or creates, the database at path and brings its schema up to
// date. path is a file name, a "file:" URI, or ":memory:" for a private
// in-memory database that lives until Close. A plain file name must not
// contain '?'.
func Open(ctx context.Context, path string) (*Store, error) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	db, err := sql.Open("sqlite", path+sep+params)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	if strings.Contains(path, ":memory:") || strings.Contains(path, "mode=memory") {
		// Each connection to ":memory:" is a database of its own, so
		// the pool must hold exactly one, forever.
		db.SetMaxOpenConns(1)
		db.SetConnMaxIdleTime(0)
		db.SetConnMaxLifetime(0)
	}
	s := &Store{db: db, writer: make(chan struct{}, 1)}
	if err := s.open(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	if err := s.migrate(ctx); err != nil {
		return err
	}
	var err error
	if s.appendSeq, err = s.db.PrepareContext(ctx, appendSeq); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if s.insertEvent, err = s.db.PrepareContext(ctx, insertEvent); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	for _, stmt := range []*sql.Stmt{s.appendSeq, s.insertEvent} {
		if stmt != nil {
			stmt.Close()
		}
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlitestore: close: %w", err)
	}
	return nil
}

// Ping implements store.Store: the file answers a query and records the
// newest migration this binary knows.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM "+migrationTable+" WHERE version = ?", s.latest).Scan(&n)
	if err == nil && n != 1 {
		err = fmt.Errorf("migration %d is not applied", s.latest)
	}
	if err != nil {
		return fmt.Errorf("sqlitestore: ping: %w", err)
	}
	return nil
}

func (s *Store) migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	ms, err := sqlmigrate.Load(sub)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	s.latest = ms[len(ms)-1].Version
	// BEGIN IMMEDIATE serialises processes opening the same file at
	// once: the second sees what the first applied.
	err = s.write(ctx, func(tx *sql.Tx) error {
		return sqlmigrate.Apply(ctx, sqlmigrate.SQL(tx), migrationTable, ms)
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// write runs fn in a transaction holding the write lock and commits it
// when fn returns nil.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-s.writer }()
	return s.inTx(ctx, nil, fn)
}

// read runs fn in a read-only transaction, which begins deferred and takes
// no write lock, so its queries share one snapshot.
func (s *Store) read(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.inTx(ctx, &sql.TxOptions{ReadOnly: true}, fn)
}

func (s *Store) inTx(ctx context.Context, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// timeFormat is fixed width, so times sort as text.
const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}

// nullTime turns a nullable column into a *time.Time.
func nullTime(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := parseTime(s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// nullJSON stores nil as NULL.
func nullJSON(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// objectOr returns b, or "{}" when b is nil.
func objectOr(b []byte) string {
	if b == nil {
		return "{}"
	}
	return string(b)
}

// isUnique reports whether err is a UNIQUE or PRIMARY KEY violation
// naming one of the given columns ("table.column").
func isUnique(err error, column string) bool {
	e, ok := errors.AsType[*msqlite.Error](err)
	if !ok {
		return false
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return strings.Contains(e.Error(), column)
	}
	return false
}
