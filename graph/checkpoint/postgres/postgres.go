package postgres

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/internal/sqlmigrate"
	"github.com/trellis-ai/trellis/internal/sqlopen"
)

var _ graph.Checkpointer = (*Saver)(nil)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationTable records applied versions. It is named for this package so
// other stores can keep their own migrations in the same schema.
const migrationTable = "checkpoint_migrations"

// foreignKeyViolation is the SQLSTATE of a write whose checkpoint is
// missing.
const foreignKeyViolation = "23503"

// Saver is a graph.Checkpointer backed by PostgreSQL. It is safe for
// concurrent use, also by several processes sharing the database.
type Saver struct {
	pool  *pgxpool.Pool
	owned bool // Close closes pool
}

// New migrates the schema on pool's search_path and returns a Saver that
// uses pool. The caller keeps ownership of pool: Close leaves it open.
//
// Processes starting together may call New at once; an advisory lock per
// schema lets one migrate while the others wait and then find nothing to do.
func New(ctx context.Context, pool *pgxpool.Pool) (*Saver, error) {
	s, err := newSaver(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("postgres: new checkpoint saver: %w", err)
	}
	return s, nil
}

// Open connects to the database at dsn, a URL or keyword/value string as
// pgxpool.ParseConfig takes, and migrates it as New does. The Saver owns
// the pool; Close closes it.
func Open(ctx context.Context, dsn string) (*Saver, error) {
	s, err := sqlopen.Postgres(ctx, dsn, newSaver)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s.owned = true
	return s, nil
}

func newSaver(ctx context.Context, pool *pgxpool.Pool) (*Saver, error) {
	if _, err := sqlmigrate.Postgres(ctx, pool, "trellis/graph/checkpoint/postgres", migrationTable, migrationFS); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return &Saver{pool: pool}, nil
}

// Close closes the pool if Open made it, and does nothing otherwise.
func (s *Saver) Close() {
	if s.owned {
		s.pool.Close()
	}
}

const (
	// putCheckpoint inserts the blobs and the checkpoint in one statement,
	// which commits or fails as a whole. A version names one value
	// forever, so a blob stored already is kept.
	putCheckpoint = `
WITH blobs AS (
    INSERT INTO checkpoint_blobs (thread_id, ns, field, version, delta, base, data)
    SELECT $1, $2, b.field, b.version, b.delta, b.base, b.data
    FROM unnest($9::text[], $10::text[], $11::boolean[], $12::text[], $13::bytea[]) AS b (field, version, delta, base, data)
    ON CONFLICT DO NOTHING
)
INSERT INTO checkpoints (thread_id, ns, checkpoint_id, parent_id, step, source, created_at, body)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (thread_id, ns, checkpoint_id) DO UPDATE SET
    parent_id = excluded.parent_id, step = excluded.step, source = excluded.source,
    created_at = excluded.created_at, body = excluded.body`

	putWrites = `
INSERT INTO checkpoint_writes (thread_id, ns, checkpoint_id, task_id, idx, channel, value)
SELECT $1, $2, $3, w.task_id, w.idx, w.channel, w.value
FROM unnest($4::text[], $5::integer[], $6::text[], $7::bytea[]) AS w (task_id, idx, channel, value)
ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) DO UPDATE SET
    channel = excluded.channel, value = excluded.value`

	// The three reads of Get each start from target, one of these two.
	targetByID = `target AS (
    SELECT checkpoint_id, body FROM checkpoints
    WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3)`
	targetLatest = `target AS (
    SELECT checkpoint_id, body FROM checkpoints
    WHERE thread_id = $1 AND ns = $2
    ORDER BY checkpoint_id DESC LIMIT 1)`

	selectBody = `WITH %s SELECT body FROM target`

	// selectBlobs starts from the checkpoint's versions and follows each
	// delta blob's base. UNION, not UNION ALL, drops pairs already seen,
	// which also ends a corrupt cycle.
	selectBlobs = `
WITH RECURSIVE %s,
chain (field, version) AS (
    SELECT v.key COLLATE "C", v.value COLLATE "C"
    FROM target, json_each_text(target.body -> 'versions') AS v
    UNION
    SELECT b.field, b.base
    FROM chain
    JOIN checkpoint_blobs b
      ON b.thread_id = $1 AND b.ns = $2 AND b.field = chain.field AND b.version = chain.version
    WHERE b.delta AND b.base <> ''
)
SELECT b.field, b.version, b.delta, b.base, b.data
FROM chain
JOIN checkpoint_blobs b
  ON b.thread_id = $1 AND b.ns = $2 AND b.field = chain.field AND b.version = chain.version
ORDER BY b.field, b.version`

	selectWrites = `
WITH %s
SELECT w.task_id, w.idx, w.channel, w.value
FROM checkpoint_writes w JOIN target USING (checkpoint_id)
WHERE w.thread_id = $1 AND w.ns = $2
ORDER BY w.task_id, w.idx`
)

// Put implements graph.Checkpointer. The checkpoint and its blobs commit
// together. Putting a checkpoint id again replaces the checkpoint but keeps
// its pending writes.
func (s *Saver) Put(ctx context.Context, cp graph.Checkpoint, blobs []graph.Blob) error {
	args, err := putArgs(cp, blobs)
	if err == nil {
		_, err = s.pool.Exec(ctx, putCheckpoint, args...)
	}
	if err != nil {
		return fmt.Errorf("postgres: put checkpoint %q/%q: %w", cp.ThreadID, cp.ID, err)
	}
	return nil
}

// PutBatch implements graph.BatchPutter: one round trip, whose
// statements PostgreSQL runs in one implicit transaction (a batch ends
// with a single Sync), so they commit together, in order.
func (s *Saver) PutBatch(ctx context.Context, puts []graph.CheckpointPut) error {
	if len(puts) == 0 {
		return nil
	}
	var b pgx.Batch
	for _, p := range puts {
		args, err := putArgs(p.Checkpoint, p.Blobs)
		if err != nil {
			return fmt.Errorf("postgres: put checkpoint %q/%q: %w", p.Checkpoint.ThreadID, p.Checkpoint.ID, err)
		}
		b.Queue(putCheckpoint, args...)
	}
	br := s.pool.SendBatch(ctx, &b)
	for _, p := range puts {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return fmt.Errorf("postgres: put checkpoint %q/%q: %w", p.Checkpoint.ThreadID, p.Checkpoint.ID, err)
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("postgres: put %d checkpoints: %w", len(puts), err)
	}
	return nil
}

// putArgs are putCheckpoint's arguments for cp and its blobs.
func putArgs(cp graph.Checkpoint, blobs []graph.Blob) ([]any, error) {
	if cp.ThreadID == "" || cp.ID == "" {
		return nil, errors.New("thread id and id are required")
	}
	cp.CreatedAt = cp.CreatedAt.UTC()
	body, err := graph.EncodeCheckpoint(cp)
	if err != nil {
		return nil, err
	}
	var (
		fields   = make([]string, len(blobs))
		versions = make([]string, len(blobs))
		deltas   = make([]bool, len(blobs))
		bases    = make([]string, len(blobs))
		data     = make([][]byte, len(blobs))
	)
	for i, b := range blobs {
		fields[i], versions[i], deltas[i], bases[i], data[i] = b.Field, b.Version, b.Delta, b.Base, nonNil(b.Data)
	}
	return []any{cp.ThreadID, cp.Namespace, cp.ID, cp.ParentID, cp.Step,
		string(cp.Source), cp.CreatedAt, body, fields, versions, deltas, bases, data}, nil
}

// PutWrites implements graph.Checkpointer. It returns an error matching
// graph.ErrCheckpointNotFound when ref names no stored checkpoint.
func (s *Saver) PutWrites(ctx context.Context, ref graph.Ref, writes []graph.Write) error {
	if len(writes) == 0 {
		return nil
	}
	if ref.ID == "" {
		return fmt.Errorf("postgres: put writes %s/%s: checkpoint id is required: %w", ref.ThreadID, ref.ID, graph.ErrCheckpointNotFound)
	}
	// One INSERT may not update a row twice, so the last write of each
	// (task, index) is the one sent, as if they were stored in turn.
	writes = slices.Clone(writes)
	slices.SortStableFunc(writes, func(a, b graph.Write) int {
		return cmp.Or(strings.Compare(a.TaskID, b.TaskID), cmp.Compare(a.Index, b.Index))
	})
	var (
		tasks    []string
		idxs     []int
		channels []string
		values   [][]byte
	)
	for i, w := range writes {
		if i+1 < len(writes) && writes[i+1].TaskID == w.TaskID && writes[i+1].Index == w.Index {
			continue
		}
		tasks, idxs = append(tasks, w.TaskID), append(idxs, w.Index)
		channels, values = append(channels, w.Channel), append(values, nonNil(w.Value))
	}
	_, err := s.pool.Exec(ctx, putWrites, ref.ThreadID, ref.Namespace, ref.ID, tasks, idxs, channels, values)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == foreignKeyViolation {
		err = graph.ErrCheckpointNotFound
	}
	if err != nil {
		return fmt.Errorf("postgres: put writes %s/%s: %w", ref.ThreadID, ref.ID, err)
	}
	return nil
}

// Get implements graph.Checkpointer. Blobs come sorted by field and
// version. The three reads go in one round trip and share one snapshot, so
// a concurrent Put or DeleteThread cannot tear the result.
func (s *Saver) Get(ctx context.Context, ref graph.Ref) (*graph.Saved, error) {
	saved, err := s.get(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("postgres: get checkpoint %s/%s: %w", ref.ThreadID, ref.ID, err)
	}
	return saved, nil
}

func (s *Saver) get(ctx context.Context, ref graph.Ref) (*graph.Saved, error) {
	target, args := targetLatest, []any{ref.ThreadID, ref.Namespace}
	if ref.ID != "" {
		target, args = targetByID, append(args, ref.ID)
	}
	var (
		body   []byte
		saved  graph.Saved
		b      pgx.Batch
		scanFn = func(row pgx.Row) error {
			if err := row.Scan(&body); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			return nil
		}
	)
	b.BeginTx(pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	b.Queue(fmt.Sprintf(selectBody, target), args...).QueryRow(scanFn)
	b.Queue(fmt.Sprintf(selectBlobs, target), args...).Query(func(rows pgx.Rows) error {
		var err error
		saved.Blobs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (graph.Blob, error) {
			var b graph.Blob
			err := row.Scan(&b.Field, &b.Version, &b.Delta, &b.Base, &b.Data)
			return b, err
		})
		return err
	})
	b.Queue(fmt.Sprintf(selectWrites, target), args...).Query(func(rows pgx.Rows) error {
		var err error
		saved.Writes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (graph.Write, error) {
			var w graph.Write
			err := row.Scan(&w.TaskID, &w.Index, &w.Channel, &w.Value)
			return w, err
		})
		return err
	})
	br := s.pool.SendBatch(ctx, &b)
	tx := br.Tx()
	defer tx.Rollback(ctx) // after Commit, a harmless ErrTxClosed
	if err := br.Close(); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	if body == nil {
		return nil, graph.ErrCheckpointNotFound
	}
	cp, err := graph.DecodeCheckpoint(body)
	if err != nil {
		return nil, err
	}
	saved.Checkpoint = cp
	return &saved, nil
}

// List implements graph.Checkpointer.
func (s *Saver) List(ctx context.Context, opts graph.ListOptions) ([]graph.Checkpoint, error) {
	query := "SELECT body FROM checkpoints WHERE thread_id = $1 AND ns = $2"
	args := []any{opts.ThreadID, opts.Namespace}
	if opts.Before != "" {
		args = append(args, opts.Before)
		query += fmt.Sprintf(" AND checkpoint_id < $%d", len(args))
	}
	query += " ORDER BY checkpoint_id DESC"
	if opts.Limit > 0 {
		args = append(args, opts.Limit)
		query += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list checkpoints %s: %w", opts.ThreadID, err)
	}
	cps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (graph.Checkpoint, error) {
		var body []byte
		if err := row.Scan(&body); err != nil {
			return graph.Checkpoint{}, err
		}
		return graph.DecodeCheckpoint(body)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list checkpoints %s: %w", opts.ThreadID, err)
	}
	return cps, nil
}

// DeleteThread implements graph.Checkpointer. It is one statement, so a
// thread is either gone entirely or untouched.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	const query = `
WITH writes AS (DELETE FROM checkpoint_writes WHERE thread_id = $1),
     blobs AS (DELETE FROM checkpoint_blobs WHERE thread_id = $1)
DELETE FROM checkpoints WHERE thread_id = $1`
	if _, err := s.pool.Exec(ctx, query, threadID); err != nil {
		return fmt.Errorf("postgres: delete thread %s: %w", threadID, err)
	}
	return nil
}

// nonNil keeps a nil slice, which pgx sends as NULL, out of a NOT NULL
// column.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
