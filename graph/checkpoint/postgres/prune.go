package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/graph"
)

var _ graph.Pruner = (*Saver)(nil)

// Prune implements graph.Pruner. Each thread namespace is pruned in its own
// transaction, and only rows read in it are deleted by key, so a Put that
// commits meanwhile keeps all it wrote, and a process killed halfway leaves
// every namespace either pruned or untouched.
func (s *Saver) Prune(ctx context.Context, opts graph.PruneOptions) (graph.PruneStats, error) {
	mode := pgx.ReadWrite
	if opts.DryRun {
		mode = pgx.ReadOnly
	}
	st, err := graph.PruneWalk(ctx, opts, func(ctx context.Context, after graph.PruneSpace) ([]graph.PruneSpace, error) {
		rows, err := s.pool.Query(ctx, `SELECT DISTINCT thread_id, ns FROM checkpoints WHERE (thread_id, ns) > ($1, $2)
ORDER BY thread_id, ns LIMIT $3`, after.Thread, after.NS, graph.PruneSpacePage)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (sp graph.PruneSpace, err error) {
			err = row.Scan(&sp.Thread, &sp.NS)
			return sp, err
		})
	}, func(ctx context.Context, sp graph.PruneSpace, pins map[string]bool) (st graph.PruneStats, err error) {
		err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: mode}, func(tx pgx.Tx) (err error) {
			st, err = pruneNamespace(ctx, tx, sp.Thread, sp.NS, pins, opts)
			return err
		})
		return st, err
	})
	if err != nil {
		return st, fmt.Errorf("postgres: %w", err)
	}
	return st, nil
}

// Bytes returns the stored size of checkpoints, blobs and writes: their
// bodies, data and values, not the tables' pages.
func (s *Saver) Bytes(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `
SELECT (SELECT coalesce(sum(octet_length(body::text)), 0) FROM checkpoints)
     + (SELECT coalesce(sum(octet_length(data)), 0) FROM checkpoint_blobs)
     + (SELECT coalesce(sum(octet_length(value)), 0) FROM checkpoint_writes)`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: checkpoint bytes: %w", err)
	}
	return n, nil
}

func pruneNamespace(ctx context.Context, tx pgx.Tx, thread, ns string, pins map[string]bool, opts graph.PruneOptions) (graph.PruneStats, error) {
	rows, err := tx.Query(ctx, `SELECT body FROM checkpoints WHERE thread_id = $1 AND ns = $2`, thread, ns)
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("checkpoints: %w", err)
	}
	r := graph.PruneRead{Sizes: make(map[string]int64), Writes: make(map[string]int)}
	r.Nodes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (graph.PruneNode, error) {
		var body []byte
		if err := row.Scan(&body); err != nil {
			return graph.PruneNode{}, err
		}
		cp, err := graph.DecodeCheckpoint(body)
		r.Sizes[cp.ID] += int64(len(body))
		return opts.Node(&cp, pins), err
	})
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("checkpoints: %w", err)
	}
	rows, err = tx.Query(ctx, `SELECT field, version, delta, base, octet_length(data) FROM checkpoint_blobs
WHERE thread_id = $1 AND ns = $2`, thread, ns)
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("blobs: %w", err)
	}
	r.Blobs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (b graph.PruneBlob, err error) {
		var n int64
		err = row.Scan(&b.Field, &b.Version, &b.Delta, &b.Base, &n)
		r.BlobSizes = append(r.BlobSizes, n)
		return b, err
	})
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("blobs: %w", err)
	}
	rows, err = tx.Query(ctx, `SELECT checkpoint_id, count(*), sum(octet_length(value)) FROM checkpoint_writes
WHERE thread_id = $1 AND ns = $2 GROUP BY checkpoint_id`, thread, ns)
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("writes: %w", err)
	}
	var id string
	var n int
	var size int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &n, &size}, func() error {
		r.Writes[id] = n
		r.Sizes[id] += size
		return nil
	}); err != nil {
		return graph.PruneStats{}, fmt.Errorf("writes: %w", err)
	}

	dropIDs, dropBlobs, st := r.Plan(opts.Keep)
	if opts.DryRun || (len(dropIDs) == 0 && len(dropBlobs) == 0) {
		return st, nil
	}
	fields, versions := make([]string, len(dropBlobs)), make([]string, len(dropBlobs))
	for k, i := range dropBlobs {
		fields[k], versions[k] = r.Blobs[i].Field, r.Blobs[i].Version
	}
	// Writes go by hand rather than through the foreign key's cascade, as
	// DeleteThread does.
	const del = `
WITH writes AS (
    DELETE FROM checkpoint_writes WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = ANY($3)),
cps AS (
    DELETE FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = ANY($3))
DELETE FROM checkpoint_blobs b
USING unnest($4::text[], $5::text[]) AS d(field, version)
WHERE b.thread_id = $1 AND b.ns = $2 AND b.field = d.field AND b.version = d.version`
	if _, err := tx.Exec(ctx, del, thread, ns, dropIDs, fields, versions); err != nil {
		return st, fmt.Errorf("delete: %w", err)
	}
	return st, nil
}
