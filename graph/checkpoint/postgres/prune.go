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
	if opts.Keep < 1 {
		return graph.PruneStats{}, fmt.Errorf("postgres: prune: keep %d: must be at least 1", opts.Keep)
	}
	var total graph.PruneStats
	var after [2]string
	for {
		// Keyset pages: memory stays one page of names, whatever the
		// number of threads.
		rows, err := s.pool.Query(ctx, `SELECT DISTINCT thread_id, ns FROM checkpoints WHERE (thread_id, ns) > ($1, $2)
ORDER BY thread_id, ns LIMIT $3`, after[0], after[1], graph.PruneSpacePage)
		if err != nil {
			return total, fmt.Errorf("postgres: prune: list threads: %w", err)
		}
		spaces, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]string, error) {
			var sp [2]string
			err := row.Scan(&sp[0], &sp[1])
			return sp, err
		})
		if err != nil {
			return total, fmt.Errorf("postgres: prune: list threads: %w", err)
		}
		for _, sp := range spaces {
			pins, err := opts.Pins(ctx, sp[0])
			if err != nil {
				return total, fmt.Errorf("postgres: prune: %w", err)
			}
			mode := pgx.ReadWrite
			if opts.DryRun {
				mode = pgx.ReadOnly
			}
			var st graph.PruneStats
			err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: mode}, func(tx pgx.Tx) (err error) {
				st, err = pruneNamespace(ctx, tx, sp[0], sp[1], pins, opts)
				return err
			})
			if err != nil {
				return total, fmt.Errorf("postgres: prune %s/%s: %w", sp[0], sp[1], err)
			}
			total = total.Add(st)
		}
		if len(spaces) < graph.PruneSpacePage {
			return total, nil
		}
		after = spaces[len(spaces)-1]
	}
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
	sizes := make(map[string]int64)
	nodes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (graph.PruneNode, error) {
		var body []byte
		if err := row.Scan(&body); err != nil {
			return graph.PruneNode{}, err
		}
		cp, err := graph.DecodeCheckpoint(body)
		sizes[cp.ID] = int64(len(body))
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
	var blobSizes []int64
	blobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (b graph.PruneBlob, err error) {
		var n int64
		err = row.Scan(&b.Field, &b.Version, &b.Delta, &b.Base, &n)
		blobSizes = append(blobSizes, n)
		return b, err
	})
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("blobs: %w", err)
	}
	type writeRow struct {
		n    int
		size int64
	}
	writes := make(map[string]writeRow)
	rows, err = tx.Query(ctx, `SELECT checkpoint_id, count(*), sum(octet_length(value)) FROM checkpoint_writes
WHERE thread_id = $1 AND ns = $2 GROUP BY checkpoint_id`, thread, ns)
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("writes: %w", err)
	}
	var id string
	var w writeRow
	if _, err := pgx.ForEachRow(rows, []any{&id, &w.n, &w.size}, func() error {
		writes[id] = w
		return nil
	}); err != nil {
		return graph.PruneStats{}, fmt.Errorf("writes: %w", err)
	}

	dropIDs, dropBlobs := graph.PlanPrune(nodes, blobs, opts.Keep)
	var st graph.PruneStats
	if len(dropIDs) > 0 {
		st.Threads = 1
	}
	for _, id := range dropIDs {
		st.Checkpoints++
		st.Writes += writes[id].n
		st.Bytes += sizes[id] + writes[id].size
	}
	fields, versions := make([]string, len(dropBlobs)), make([]string, len(dropBlobs))
	for k, i := range dropBlobs {
		st.Blobs++
		st.Bytes += blobSizes[i]
		fields[k], versions[k] = blobs[i].Field, blobs[i].Version
	}
	if opts.DryRun || (len(dropIDs) == 0 && len(dropBlobs) == 0) {
		return st, nil
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
