package sqlmigrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite applies the migrations in fsys's folder "migrations" (see Load) to an SQLite
// database opened by internal/sqlopen, recording them in table, and
// returns the newest version. Its transaction begins IMMEDIATE (sqlopen
// sets it), which serialises processes opening the same file at once:
// the second sees what the first applied.
func SQLite(ctx context.Context, db *sql.DB, table string, fsys fs.FS) (int, error) {
	ms, err := loadDir(fsys)
	if err != nil {
		return 0, err
	}
	tx, err := begin(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("sqlmigrate: begin: %w", err)
	}
	defer tx.Rollback()
	if err := Apply(ctx, SQL(tx), table, ms); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("sqlmigrate: commit: %w", err)
	}
	return latest(ms), nil
}

// beginTries bounds begin's tries, 10 ms apart: the switch to WAL that
// makes them fail takes a few milliseconds.
const beginTries = 200

// begin begins the migration's transaction, trying again while the file
// is busy. A connection of a process opening a new file switches it to
// WAL as it opens, and SQLite answers another connection doing the same
// at that moment SQLITE_BUSY at once, without waiting (its busy handler
// does not cover the switch): two processes starting on one new data
// directory hit it.
func begin(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	busy := retrypolicy.NewBuilder[*sql.Tx]().
		HandleIf(func(_ *sql.Tx, err error) bool {
			var se *msqlite.Error
			return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
		}).
		WithMaxAttempts(beginTries).
		WithDelay(10 * time.Millisecond).
		ReturnLastFailure().
		Build()
	return failsafe.With(busy).WithContext(ctx).Get(func() (*sql.Tx, error) { return db.BeginTx(ctx, nil) })
}

// Postgres applies the migrations in fsys's folder "migrations" to the schema on pool's
// search_path, recording them in table, and returns the newest version.
// Processes starting together may call it at once: a transaction-level
// advisory lock keyed by lock and the schema lets one migrate while the
// others wait and then find nothing to do; stores in other schemas, such
// as parallel tests, do not wait on each other.
func Postgres(ctx context.Context, pool *pgxpool.Pool, lock, table string, fsys fs.FS) (int, error) {
	ms, err := loadDir(fsys)
	if err != nil {
		return 0, err
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Released at commit.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || current_schema(), 0))`, lock); err != nil {
			return fmt.Errorf("sqlmigrate: lock: %w", err)
		}
		return Apply(ctx, Pgx(tx), table, ms)
	})
	if err != nil {
		return 0, err
	}
	return latest(ms), nil
}

// latest is the newest version of ms, 0 for none.
func latest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// loadDir loads the migrations in fsys's folder "migrations", where every
// backend embeds them.
func loadDir(fsys fs.FS) ([]Migration, error) {
	sub, err := fs.Sub(fsys, "migrations")
	if err != nil {
		return nil, fmt.Errorf("sqlmigrate: %w", err)
	}
	return Load(sub)
}
