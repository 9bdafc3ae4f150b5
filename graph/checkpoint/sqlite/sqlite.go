package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/internal/groupcommit"
	"github.com/trellis-ai/trellis/internal/sqlmigrate"
	"github.com/trellis-ai/trellis/internal/sqlopen"
)

var _ graph.Checkpointer = (*Saver)(nil)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationTable records applied versions. It is named for this package so
// other stores can keep their own migrations in the same database file.
const migrationTable = "checkpoint_migrations"

// Saver is a graph.Checkpointer backed by one SQLite database. It is safe
// for concurrent use, also by several processes sharing the file.
type Saver struct {
	db *sql.DB
	// writer runs Put, PutWrites and DeleteThread, several to a commit:
	// concurrent runs share the cost of committing and never wait in
	// SQLite's busy handler for each other.
	writer *groupcommit.Writer
}

// Open opens, or creates, the database at path and brings its schema up to
// date. path is a file name, a "file:" URI, or ":memory:" for a private
// in-memory database that lives until Close. A plain file name must not
// contain '?'.
func Open(ctx context.Context, path string) (*Saver, error) {
	db, err := sqlopen.SQLite(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s := &Saver{db: db}
	if _, err := sqlmigrate.SQLite(ctx, db, migrationTable, migrationFS); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: migrate: %w", path, err)
	}
	if s.writer, err = groupcommit.New(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return s, nil
}

// TruncateWAL empties the database's write-ahead log into the file (see
// sqlopen.TruncateWAL), so deleted threads leave no trace in it.
func (s *Saver) TruncateWAL(ctx context.Context) error {
	if err := sqlopen.TruncateWAL(ctx, s.db); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *Saver) Close() error {
	s.writer.Close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

const (
	upsertCheckpoint = `
INSERT INTO checkpoints (thread_id, ns, checkpoint_id, parent_id, step, source, created_at, body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (thread_id, ns, checkpoint_id) DO UPDATE SET
    parent_id = excluded.parent_id, step = excluded.step, source = excluded.source,
    created_at = excluded.created_at, body = excluded.body`

	// A version names one value forever, so a blob stored already is kept.
	insertBlob = `
INSERT INTO checkpoint_blobs (thread_id, ns, field, version, delta, base, data)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`

	upsertWrite = `
INSERT INTO checkpoint_writes (thread_id, ns, checkpoint_id, task_id, idx, channel, value)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) DO UPDATE SET
    channel = excluded.channel, value = excluded.value`

	selectByID = `
SELECT body FROM checkpoints WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?`

	selectLatest = `
SELECT body FROM checkpoints WHERE thread_id = ? AND ns = ?
ORDER BY checkpoint_id DESC LIMIT 1`

	// selectBlobs starts from the checkpoint's versions, a JSON object of
	// field to version, and follows each delta blob's base. UNION, not
	// UNION ALL, drops pairs already seen, which also ends a corrupt cycle.
	//
	// CROSS JOIN makes chain the outer loop, so each of its rows is one
	// primary-key lookup. Left to itself the planner read every blob of
	// the thread's namespace for the final join (SEARCH b USING INDEX
	// (thread_id=? AND ns=?)), and a thread's load grew with the square of
	// its length.
	selectBlobs = `
WITH RECURSIVE chain (field, version) AS (
    SELECT key, value FROM json_each(?3)
    UNION
    SELECT b.field, b.base
    FROM chain
    CROSS JOIN checkpoint_blobs b
      ON b.thread_id = ?1 AND b.ns = ?2 AND b.field = chain.field AND b.version = chain.version
    WHERE b.delta AND b.base <> ''
)
SELECT b.field, b.version, b.delta, b.base, b.data
FROM chain
CROSS JOIN checkpoint_blobs b
  ON b.thread_id = ?1 AND b.ns = ?2 AND b.field = chain.field AND b.version = chain.version
ORDER BY b.field, b.version`

	selectWrites = `
SELECT task_id, idx, channel, value FROM checkpoint_writes
WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?
ORDER BY task_id, idx`

	// A limit of -1 is SQLite's "no limit".
	listAll = `
SELECT body FROM checkpoints WHERE thread_id = ? AND ns = ?
ORDER BY checkpoint_id DESC LIMIT ?`
	listBefore = `
SELECT body FROM checkpoints WHERE thread_id = ? AND ns = ? AND checkpoint_id < ?
ORDER BY checkpoint_id DESC LIMIT ?`
)

// Put implements graph.Checkpointer. The checkpoint and its blobs commit
// together. Putting a checkpoint id again replaces the checkpoint but keeps
// its pending writes.
func (s *Saver) Put(ctx context.Context, cp graph.Checkpoint, blobs []graph.Blob) error {
	return s.PutBatch(ctx, []graph.CheckpointPut{{Checkpoint: cp, Blobs: blobs}})
}

// PutBatch implements graph.BatchPutter: the checkpoints and their blobs
// commit together, in order.
func (s *Saver) PutBatch(ctx context.Context, puts []graph.CheckpointPut) error {
	if len(puts) == 0 {
		return nil
	}
	bodies := make([][]byte, len(puts))
	for i := range puts {
		cp := &puts[i].Checkpoint
		if cp.ThreadID == "" || cp.ID == "" {
			return fmt.Errorf("sqlite: put checkpoint %q/%q: thread id and id are required", cp.ThreadID, cp.ID)
		}
		c := *cp
		c.CreatedAt = c.CreatedAt.UTC()
		var err error
		if bodies[i], err = graph.EncodeCheckpoint(c); err != nil {
			return fmt.Errorf("sqlite: put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
		}
	}
	var cp graph.Checkpoint // the one being written, for the error
	err := s.writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for i, p := range puts {
			cp = p.Checkpoint
			if _, err := tx.ExecContext(ctx, upsertCheckpoint, cp.ThreadID, cp.Namespace, cp.ID, cp.ParentID,
				cp.Step, string(cp.Source), cp.CreatedAt.UTC().Format(timeFormat), bodies[i]); err != nil {
				return err
			}
			for _, b := range p.Blobs {
				if _, err := tx.ExecContext(ctx, insertBlob, cp.ThreadID, cp.Namespace, b.Field, b.Version,
					b.Delta, b.Base, nonNil(b.Data)); err != nil {
					return fmt.Errorf("blob %s@%s: %w", b.Field, b.Version, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	return nil
}

// timeFormat is fixed width, so created_at sorts as text.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// PutWrites implements graph.Checkpointer. It returns an error matching
// graph.ErrCheckpointNotFound when ref names no stored checkpoint.
func (s *Saver) PutWrites(ctx context.Context, ref graph.Ref, writes []graph.Write) error {
	if len(writes) == 0 {
		return nil
	}
	if ref.ID == "" {
		return fmt.Errorf("sqlite: put writes %s/%s: checkpoint id is required: %w", ref.ThreadID, ref.ID, graph.ErrCheckpointNotFound)
	}
	err := s.writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, w := range writes {
			if _, err := tx.ExecContext(ctx, upsertWrite, ref.ThreadID, ref.Namespace, ref.ID,
				w.TaskID, w.Index, w.Channel, nonNil(w.Value)); err != nil {
				if sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
					return graph.ErrCheckpointNotFound
				}
				return fmt.Errorf("task %s index %d: %w", w.TaskID, w.Index, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: put writes %s/%s: %w", ref.ThreadID, ref.ID, err)
	}
	return nil
}

// Get implements graph.Checkpointer. Blobs come sorted by field and
// version. The three reads share one snapshot, so a concurrent Put or
// DeleteThread cannot tear the result.
func (s *Saver) Get(ctx context.Context, ref graph.Ref) (*graph.Saved, error) {
	var saved graph.Saved
	err := s.read(ctx, func(tx *sql.Tx) error {
		var body []byte
		var row *sql.Row
		if ref.ID == "" {
			row = tx.QueryRowContext(ctx, selectLatest, ref.ThreadID, ref.Namespace)
		} else {
			row = tx.QueryRowContext(ctx, selectByID, ref.ThreadID, ref.Namespace, ref.ID)
		}
		if err := row.Scan(&body); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return graph.ErrCheckpointNotFound
			}
			return err
		}
		cp, err := graph.DecodeCheckpoint(body)
		if err != nil {
			return err
		}
		saved.Checkpoint = cp
		if saved.Blobs, err = readBlobs(ctx, tx, cp); err != nil {
			return err
		}
		saved.Writes, err = readWrites(ctx, tx, cp)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: get checkpoint %s/%s: %w", ref.ThreadID, ref.ID, err)
	}
	return &saved, nil
}

func readBlobs(ctx context.Context, tx *sql.Tx, cp graph.Checkpoint) ([]graph.Blob, error) {
	versions, err := json.Marshal(cp.Versions)
	if err != nil {
		return nil, fmt.Errorf("versions: %w", err)
	}
	blobs, err := queryAll(ctx, tx, func(rows *sql.Rows) (b graph.Blob, err error) {
		err = rows.Scan(&b.Field, &b.Version, &b.Delta, &b.Base, &b.Data)
		return b, err
	}, selectBlobs, cp.ThreadID, cp.Namespace, string(versions))
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	return blobs, nil
}

func readWrites(ctx context.Context, tx *sql.Tx, cp graph.Checkpoint) ([]graph.Write, error) {
	writes, err := queryAll(ctx, tx, func(rows *sql.Rows) (w graph.Write, err error) {
		err = rows.Scan(&w.TaskID, &w.Index, &w.Channel, &w.Value)
		return w, err
	}, selectWrites, cp.ThreadID, cp.Namespace, cp.ID)
	if err != nil {
		return nil, fmt.Errorf("writes: %w", err)
	}
	return writes, nil
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryAll runs query in q and scans each row it returns; nil for none.
func queryAll[T any](ctx context.Context, q querier, scan func(*sql.Rows) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// List implements graph.Checkpointer.
func (s *Saver) List(ctx context.Context, opts graph.ListOptions) ([]graph.Checkpoint, error) {
	limit := -1
	if opts.Limit > 0 {
		limit = opts.Limit
	}
	query, args := listAll, []any{opts.ThreadID, opts.Namespace, limit}
	if opts.Before != "" {
		query, args = listBefore, []any{opts.ThreadID, opts.Namespace, opts.Before, limit}
	}
	out, err := queryAll(ctx, s.db, func(rows *sql.Rows) (graph.Checkpoint, error) {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return graph.Checkpoint{}, err
		}
		return graph.DecodeCheckpoint(body)
	}, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list checkpoints %s: %w", opts.ThreadID, err)
	}
	return out, nil
}

// DeleteThread implements graph.Checkpointer.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	err := s.writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// Writes go first, by thread, rather than row by row through the
		// foreign key's cascade.
		for _, table := range []string{"checkpoint_writes", "checkpoint_blobs", "checkpoints"} {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE thread_id = ?", threadID); err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete thread %s: %w", threadID, err)
	}
	return nil
}

// read runs fn in a read-only transaction, which begins deferred and so
// takes no write lock.
func (s *Saver) read(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
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

func sqliteCode(err error) int {
	if e, ok := errors.AsType[*msqlite.Error](err); ok {
		return e.Code()
	}
	return 0
}

// nonNil keeps a nil slice out of a NOT NULL column.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
