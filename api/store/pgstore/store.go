package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/internal/sqlmigrate"
)

var _ store.Store = (*Store)(nil)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationTable records applied versions, named for this store so the
// checkpoint saver can share the schema.
const migrationTable = "chat_migrations"

// Store is a store.Store in PostgreSQL. It is safe for concurrent use,
// also by several processes sharing the database.
type Store struct {
	pool   *pgxpool.Pool
	owned  bool // Close closes pool
	latest int  // the newest migration version; Ping checks it is applied
}

// New migrates the schema on pool's search_path and returns a Store that
// uses pool. The caller keeps ownership of pool: Close leaves it open.
func New(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	s := &Store{pool: pool}
	if err := s.migrate(ctx); err != nil {
		return nil, fmt.Errorf("pgstore: new: %w", err)
	}
	return s, nil
}

// Open connects to the database at dsn, a URL or keyword/value string as
// pgxpool.ParseConfig takes, and migrates it as New does. The Store owns
// the pool; Close closes it.
func Open(ctx context.Context, dsn string) (*Store, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	s, err := New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// Close closes the pool if Open made it, and does nothing otherwise.
func (s *Store) Close() {
	if s.owned {
		s.pool.Close()
	}
}

// Ping implements store.Store: the database answers a query and records
// the newest migration this binary knows.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+migrationTable+" WHERE version = $1", s.latest).Scan(&n)
	if err == nil && n != 1 {
		err = fmt.Errorf("migration %d is not applied", s.latest)
	}
	if err != nil {
		return fmt.Errorf("pgstore: ping: %w", err)
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
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Released at commit. Keyed by schema, so stores in other
		// schemas, such as parallel tests, do not wait on each other.
		const lock = `SELECT pg_advisory_xact_lock(hashtextextended('trellis/api/store/pgstore:' || current_schema(), 0))`
		if _, err := tx.Exec(ctx, lock); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		return sqlmigrate.Apply(ctx, sqlmigrate.Pgx(tx), migrationTable, ms)
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// write runs fn in a read-committed transaction and commits it when fn
// returns nil.
func (s *Store) write(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// read runs fn in a read-only repeatable-read transaction, so its queries
// share one snapshot.
func (s *Store) read(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// violates reports whether err is a violation of the named constraint
// (unique, foreign key, …); constraint names are unique in the schema.
func violates(err error, constraint string) bool {
	e, ok := errors.AsType[*pgconn.PgError](err)
	return ok && e.ConstraintName == constraint
}

// nullJSON stores nil as NULL, and anything else as the JSON text it is.
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

// utcPtr returns t in UTC, keeping nil.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
