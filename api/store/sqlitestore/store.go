package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/internal/groupcommit"
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
	// writer runs every writing transaction, several to a commit, so
	// this process's writers queue in Go instead of polling SQLite's
	// lock and share the cost of committing.
	writer *groupcommit.Writer
	// latest is the newest migration version; Ping checks it is applied.
	latest int
	// stmts holds a prepared statement per query text (see txn).
	stmts sync.Map
	// oneConn: the pool holds one connection (":memory:"), which a
	// transaction occupies, so nothing can be prepared on the pool
	// meanwhile; queries then run unprepared.
	oneConn bool
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
	memory := strings.Contains(path, ":memory:") || strings.Contains(path, "mode=memory")
	if memory {
		// Each connection to ":memory:" is a database of its own, so
		// the pool must hold exactly one, forever.
		db.SetMaxOpenConns(1)
		db.SetConnMaxIdleTime(0)
		db.SetConnMaxLifetime(0)
	}
	s := &Store{db: db, oneConn: memory}
	if err := s.open(ctx); err != nil {
		if s.writer != nil {
			s.writer.Close()
		}
		db.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	var err error
	if s.writer, err = groupcommit.New(ctx, s.db); err != nil {
		return err
	}
	return s.migrate(ctx)
}

// Close closes the database.
func (s *Store) Close() error {
	s.writer.Close()
	s.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
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
	err = s.write(ctx, func(ctx context.Context, tx *txn) error {
		return sqlmigrate.Apply(ctx, sqlmigrate.SQL(tx.tx), migrationTable, ms)
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// write runs fn in a transaction holding the write lock, shared with
// other writers of this process (see groupcommit.Writer.Do), and returns
// once it committed or failed. fn gets a context that is not cancelled.
func (s *Store) write(ctx context.Context, fn func(context.Context, *txn) error) error {
	return s.writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return fn(ctx, &txn{tx: tx, s: s})
	})
}

// read runs fn in a read-only transaction, which begins deferred and takes
// no write lock, so its queries share one snapshot.
func (s *Store) read(ctx context.Context, fn func(*txn) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := fn(&txn{tx: tx, s: s}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// txn is a transaction whose statements are prepared once per Store and
// kept: the driver would otherwise parse every query on every call, which
// costs more than running the short inserts and updates of a run. The
// queries are constants, or built from a few constants, so the cache
// stays small.
type txn struct {
	tx *sql.Tx
	s  *Store
}

// stmt returns query's statement bound to the transaction, or nil when
// it cannot be prepared (the caller then runs the query as it is and
// reports its error).
func (t *txn) stmt(ctx context.Context, query string) *sql.Stmt {
	v, ok := t.s.stmts.Load(query)
	if !ok {
		if t.s.oneConn {
			return nil
		}
		st, err := t.s.db.PrepareContext(ctx, query)
		if err != nil {
			return nil
		}
		if v, ok = t.s.stmts.LoadOrStore(query, st); ok {
			st.Close() // another goroutine prepared it first
		}
	}
	return t.tx.StmtContext(ctx, v.(*sql.Stmt))
}

func (t *txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t *txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (t *txn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
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
