package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/internal/sqlmigrate"
	"github.com/trellis-ai/trellis/internal/sqlopen"
	"github.com/trellis-ai/trellis/store/internal/sqlstore"
)

// Store is a store.Store in PostgreSQL. It is safe for concurrent use,
// also by several processes sharing the database.
type Store struct {
	*shared
	pool  *pgxpool.Pool
	owned bool // Close closes pool
}

// shared is the store written once for both databases. Embedded under
// this name, it gives Store its methods without an exported field.
type shared = sqlstore.Store

// migrationFS holds the schema's migrations, which PostgreSQL's types
// make its own.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// New migrates the schema on pool's search_path and returns a Store that
// uses pool. The caller keeps ownership of pool: Close leaves it open.
func New(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	s, err := newStore(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("pgstore: new: %w", err)
	}
	return s, nil
}

// Open connects to the database at dsn, a URL or keyword/value string as
// pgxpool.ParseConfig takes, and migrates it as New does. The Store owns
// the pool; Close closes it.
func Open(ctx context.Context, dsn string) (*Store, error) {
	s, err := sqlopen.Postgres(ctx, dsn, newStore)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	s.owned = true
	return s, nil
}

func newStore(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	// The lock key keeps the package's old path: a process of the release
	// before the move must still wait on the same lock during an upgrade.
	latest, err := sqlmigrate.Postgres(ctx, pool, "trellis/api/store/pgstore", sqlstore.MigrationTable, migrationFS)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return &Store{shared: sqlstore.New(&db{pool: pool}, "pgstore", latest), pool: pool}, nil
}

// Close closes the pool if Open made it, and does nothing otherwise.
func (s *Store) Close() {
	if s.owned {
		s.pool.Close()
	}
}

// db is sqlstore.DB over a pgx pool. Its statements are written with ?
// placeholders, which it rebinds to PostgreSQL's $1, $2, … (see rebind).
type db struct {
	pool *pgxpool.Pool
	// rebound caches rebind's result per query text; the queries are
	// constants, or built from a few, so it stays small.
	rebound sync.Map
}

var _ sqlstore.DB = (*db)(nil)

// Tx runs fn in a read-committed transaction, whose BEGIN goes with its
// first statement (see inTx).
func (d *db) Tx(ctx context.Context, fn func(context.Context, sqlstore.Querier) error) error {
	return d.inTx(ctx, "begin", func(tx pgxQuerier) error { return fn(ctx, querier{tx, d}) })
}

// Auto runs fn's statements on the pool, each in a transaction of its own.
func (d *db) Auto(ctx context.Context, fn func(context.Context, sqlstore.Querier) error) error {
	return fn(ctx, querier{d.pool, d})
}

// Read runs fn in a read-only repeatable-read transaction, so its queries
// share one snapshot.
func (d *db) Read(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return d.inTx(ctx, "begin isolation level repeatable read read only", func(tx pgxQuerier) error { return fn(querier{tx, d}) })
}

func (d *db) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return querier{d.pool, d}.Exec(ctx, query, args...)
}

func (d *db) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return querier{d.pool, d}.Query(ctx, query, args...)
}

func (d *db) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return querier{d.pool, d}.QueryRow(ctx, query, args...)
}

// ForUpdate implements sqlstore.DB.
func (d *db) ForUpdate() string { return " FOR UPDATE" }

// Time implements sqlstore.DB: pgx encodes a time.Time as timestamptz.
func (d *db) Time(t time.Time) any { return t }

// Violates implements sqlstore.DB: constraint names are unique in the
// schema.
func (d *db) Violates(err error, constraint string) bool { return violates(err, constraint) }

// chunkSearch asks the GIN index over the chunks' tsvector, ranked by
// ts_rank. The words (letters and digits only, so none is tsquery
// syntax) are OR-ed, English-stemmed, stop words dropped.
var chunkSearch = sqlstore.ChunkSearch{
	From:  "chunks c CROSS JOIN to_tsquery('english', ?) AS query",
	Match: "c.tsv @@ query",
	Score: "ts_rank(c.tsv, query)",
	Terms: func(words []string) string { return strings.Join(words, " | ") },
	Index: chunkIndex,
}

// ChunkSearch implements sqlstore.DB.
func (d *db) ChunkSearch() sqlstore.ChunkSearch { return chunkSearch }

// memorySearch matches one user's memories, found by user id, against
// the stored tsvector, ranked as chunkSearch ranks (migration 0006 says
// why there is no GIN index to ask).
var memorySearch = sqlstore.MemorySearch{
	From:  "memories m CROSS JOIN to_tsquery('english', ?) AS query",
	Match: "m.tsv @@ query",
	Score: "ts_rank(m.tsv, query)",
	Args:  func(words []string, _ string) []any { return []any{chunkSearch.Terms(words)} },
}

// MemorySearch implements sqlstore.DB.
func (d *db) MemorySearch() sqlstore.MemorySearch { return memorySearch }

// violates reports whether err is a violation of the named constraint
// (unique, foreign key, …).
func violates(err error, constraint string) bool {
	e, ok := errors.AsType[*pgconn.PgError](err)
	return ok && e.ConstraintName == constraint
}

// pgxQuerier is a pool or a transaction.
type pgxQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// querier is a pool or a transaction as a sqlstore.Querier.
type querier struct {
	q pgxQuerier
	d *db
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.q.Exec(ctx, q.d.rebind(query), args...)
	return tag.RowsAffected(), err
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return q.q.Query(ctx, q.d.rebind(query), args...)
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return q.q.QueryRow(ctx, q.d.rebind(query), args...)
}

// Later holds query back, in a transaction, to go with the next
// statement or the commit (see lazyTx); on the pool it runs it now.
func (q querier) Later(ctx context.Context, query string, args ...any) error {
	if t, ok := q.q.(*lazyTx); ok {
		t.hold(q.d.rebind(query), args)
		return nil
	}
	_, err := q.Exec(ctx, query, args...)
	return err
}

// LaterRow holds query, which returns one row at most, back in a
// transaction to go with the next statement (see lazyTx); on the pool it
// runs it now. scan reads the row when the statement has run; the func
// returned reports its error.
func (q querier) LaterRow(ctx context.Context, query string, args []any, scan func(sqlstore.Row) error) func() error {
	if t, ok := q.q.(*lazyTx); ok {
		return t.holdRow(q.d.rebind(query), args, scan)
	}
	err := scan(q.QueryRow(ctx, query, args...))
	return func() error { return err }
}

// rebind returns query with its ? placeholders numbered $1, $2, … in
// order. A ? inside a quoted string or identifier is kept; the store's SQL
// has no other use of ? (no jsonb ? operator, no comments).
//
// A few lines of our own rather than a library: sqlx's Rebind does the
// same but brings database/sql's types, which pgx's native interface does
// not use, and pgx's named arguments (@name) would make every query spell
// its parameters differently from SQLite's.
func (d *db) rebind(query string) string {
	if v, ok := d.rebound.Load(query); ok {
		return v.(string)
	}
	var (
		b     strings.Builder
		n     int
		quote byte
	)
	b.Grow(len(query) + 8)
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	out := b.String()
	d.rebound.Store(query, out)
	return out
}
