package sqlopen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	msqlite "modernc.org/sqlite"
)

// Copy is one database file to back up and where its copy goes.
type Copy struct {
	From, To string
}

// freezeWait is how long Backup waits for each database's write lock
// before it lets go of those it holds and tries again: the lock stops
// the server's writes on the files it already holds, so it is never held
// for long while waiting on another.
const freezeWait = 200 * time.Millisecond

// Backup copies the SQLite databases in cs, which other processes may be
// writing, as they all were at one instant: the copies are what the files
// would hold had every writer stopped dead then, which is what a crash
// leaves and what Trellis recovers from. It takes every file's write
// lock for a moment (waiting on no lock while holding one for longer
// than freezeWait, so writers are held up briefly and never deadlock),
// opens a read transaction on each while all are held, lets the locks go
// and copies each file from its read transaction with SQLite's online
// backup while the writers go on. A destination must not exist. Each
// copy is checked with quick_check.
func Backup(ctx context.Context, cs []Copy) error {
	srcs := make([]*sql.DB, len(cs))
	defer func() {
		for _, db := range srcs {
			if db != nil {
				db.Close()
			}
		}
	}()
	for i, c := range cs {
		if _, err := os.Stat(c.From); err != nil {
			return fmt.Errorf("sqlopen: back up %s: %w", c.From, err)
		}
		if _, err := os.Stat(c.To); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sqlopen: back up %s: %s exists", c.From, c.To)
		}
		conn, err := msqlite.NewConnector(c.From + "?" + params)
		if err != nil {
			return fmt.Errorf("sqlopen: %s: %w", c.From, err)
		}
		srcs[i] = sql.OpenDB(conn)
	}
	reads, err := snapshot(ctx, srcs)
	defer func() {
		for _, r := range reads {
			r.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			r.Close()
		}
	}()
	if err != nil {
		return err
	}
	for i, c := range cs {
		if err := copyFrom(reads[i], c.To); err != nil {
			return fmt.Errorf("sqlopen: back up %s: %w", c.From, err)
		}
		if err := Check(ctx, c.To); err != nil {
			return err
		}
	}
	return nil
}

// snapshot opens a read transaction on each of dbs as of one instant:
// one at which it holds every file's write lock.
func snapshot(ctx context.Context, dbs []*sql.DB) ([]*sql.Conn, error) {
	busy := retrypolicy.NewBuilder[[]*sql.Conn]().
		HandleErrors(errBusy).
		WithMaxRetries(-1).
		WithDelay(freezeWait).
		ReturnLastFailure().
		Build()
	reads, err := failsafe.With(busy).WithContext(ctx).Get(func() ([]*sql.Conn, error) { return trySnapshot(ctx, dbs) })
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("sqlopen: back up: %w", context.Cause(ctx))
	}
	return reads, err
}

var errBusy = errors.New("a database's write lock is taken")

func trySnapshot(ctx context.Context, dbs []*sql.DB) (reads []*sql.Conn, err error) {
	var locks []*sql.Conn
	defer func() {
		for _, l := range locks {
			l.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			l.Close()
		}
		if err != nil {
			for _, r := range reads {
				r.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
				r.Close()
			}
			reads = nil
		}
	}()
	for _, db := range dbs {
		l, err := db.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("sqlopen: back up: %w", err)
		}
		locks = append(locks, l)
		if _, err := l.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", freezeWait.Milliseconds())); err != nil {
			return nil, fmt.Errorf("sqlopen: back up: %w", err)
		}
		if _, err := l.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			var se *msqlite.Error
			if errors.As(err, &se) && se.Code()&0xff == 5 { // SQLITE_BUSY
				return nil, errBusy
			}
			return nil, fmt.Errorf("sqlopen: back up: %w", err)
		}
	}
	for _, db := range dbs {
		r, err := db.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("sqlopen: back up: %w", err)
		}
		reads = append(reads, r)
		// A deferred BEGIN takes its snapshot at its first read.
		var n int
		if _, err := r.ExecContext(ctx, "BEGIN"); err != nil {
			return nil, fmt.Errorf("sqlopen: back up: %w", err)
		}
		if err := r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
			return nil, fmt.Errorf("sqlopen: back up: %w", err)
		}
	}
	return reads, nil
}

// copyFrom writes the database that r reads, as its open read
// transaction sees it, to the file to: SQLite's backup reads the source
// inside the transaction its connection has open.
func copyFrom(r *sql.Conn, to string) error {
	return r.Raw(func(dc any) error {
		src, ok := dc.(interface {
			NewBackup(string) (*msqlite.Backup, error)
		})
		if !ok {
			return fmt.Errorf("the driver's connection %T cannot back up", dc)
		}
		b, err := src.NewBackup(to)
		if err != nil {
			return err
		}
		if _, err := b.Step(-1); err != nil {
			b.Finish()
			return err
		}
		return b.Finish()
	})
}

// Check runs SQLite's quick_check on the database file at path, which
// must exist, and returns an error unless it answers ok.
func Check(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("sqlopen: check %s: %w", path, err)
	}
	conn, err := msqlite.NewConnector("file:" + path + "?mode=ro")
	if err != nil {
		return fmt.Errorf("sqlopen: check %s: %w", path, err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var res string
	if err := db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&res); err != nil {
		return fmt.Errorf("sqlopen: check %s: %w", path, err)
	}
	if res != "ok" {
		return fmt.Errorf("sqlopen: check %s: %s", path, res)
	}
	return nil
}
