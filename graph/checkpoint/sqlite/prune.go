package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/trellis-ai/trellis/graph"
)

var _ graph.Pruner = (*Saver)(nil)

// Prune implements graph.Pruner. Each thread namespace is read and pruned
// in one write transaction, so a Put cannot slip in between the plan and
// the deletes, and a process killed halfway leaves every namespace either
// pruned or untouched.
func (s *Saver) Prune(ctx context.Context, opts graph.PruneOptions) (graph.PruneStats, error) {
	st, err := graph.PruneWalk(ctx, opts, func(ctx context.Context, after graph.PruneSpace) ([]graph.PruneSpace, error) {
		return queryAll(ctx, s.db, func(rows *sql.Rows) (sp graph.PruneSpace, err error) {
			err = rows.Scan(&sp.Thread, &sp.NS)
			return sp, err
		}, `SELECT DISTINCT thread_id, ns FROM checkpoints WHERE (thread_id, ns) > (?, ?)
ORDER BY thread_id, ns LIMIT ?`, after.Thread, after.NS, graph.PruneSpacePage)
	}, func(ctx context.Context, sp graph.PruneSpace, pins map[string]bool) (st graph.PruneStats, err error) {
		fn := func(ctx context.Context, tx *sql.Tx) (err error) {
			st, err = pruneNamespace(ctx, tx, sp.Thread, sp.NS, pins, opts)
			return err
		}
		if opts.DryRun {
			err = s.read(ctx, func(tx *sql.Tx) error { return fn(ctx, tx) })
		} else {
			err = s.writer.Do(ctx, fn)
		}
		return st, err
	})
	if err != nil {
		return st, fmt.Errorf("sqlite: %w", err)
	}
	return st, nil
}

// Bytes returns the stored size of checkpoints, blobs and writes: their
// bodies, data and values, not the database's pages.
func (s *Saver) Bytes(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `
SELECT (SELECT coalesce(sum(length(body)), 0) FROM checkpoints)
     + (SELECT coalesce(sum(length(data)), 0) FROM checkpoint_blobs)
     + (SELECT coalesce(sum(length(value)), 0) FROM checkpoint_writes)`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlite: checkpoint bytes: %w", err)
	}
	return n, nil
}

func pruneNamespace(ctx context.Context, tx *sql.Tx, thread, ns string, pins map[string]bool, opts graph.PruneOptions) (graph.PruneStats, error) {
	r := graph.PruneRead{Sizes: make(map[string]int64), Writes: make(map[string]int)}
	var err error
	r.Nodes, err = queryAll(ctx, tx, func(rows *sql.Rows) (graph.PruneNode, error) {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return graph.PruneNode{}, err
		}
		cp, err := graph.DecodeCheckpoint(body)
		r.Sizes[cp.ID] += int64(len(body))
		return opts.Node(&cp, pins), err
	}, `SELECT body FROM checkpoints WHERE thread_id = ? AND ns = ?`, thread, ns)
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("checkpoints: %w", err)
	}
	r.Blobs, err = queryAll(ctx, tx, func(rows *sql.Rows) (b graph.PruneBlob, err error) {
		var n int64
		err = rows.Scan(&b.Field, &b.Version, &b.Delta, &b.Base, &n)
		r.BlobSizes = append(r.BlobSizes, n)
		return b, err
	}, `SELECT field, version, delta, base, length(data) FROM checkpoint_blobs WHERE thread_id = ? AND ns = ?`, thread, ns)
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("blobs: %w", err)
	}
	_, err = queryAll(ctx, tx, func(rows *sql.Rows) (struct{}, error) {
		var id string
		var n int
		var size int64
		err := rows.Scan(&id, &n, &size)
		r.Writes[id] = n
		r.Sizes[id] += size
		return struct{}{}, err
	}, `SELECT checkpoint_id, count(*), sum(length(value)) FROM checkpoint_writes
WHERE thread_id = ? AND ns = ? GROUP BY checkpoint_id`, thread, ns)
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("writes: %w", err)
	}

	dropIDs, dropBlobs, st := r.Plan(opts.Keep)
	if opts.DryRun {
		return st, nil
	}
	for _, id := range dropIDs {
		// Writes go by hand rather than through the foreign key's
		// cascade, as DeleteThread does.
		if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_writes WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?`, thread, ns, id); err != nil {
			return st, fmt.Errorf("writes of %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?`, thread, ns, id); err != nil {
			return st, fmt.Errorf("checkpoint %s: %w", id, err)
		}
	}
	for _, i := range dropBlobs {
		b := r.Blobs[i]
		if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_blobs WHERE thread_id = ? AND ns = ? AND field = ? AND version = ?`,
			thread, ns, b.Field, b.Version); err != nil {
			return st, fmt.Errorf("blob %s@%s: %w", b.Field, b.Version, err)
		}
	}
	return st, nil
}
