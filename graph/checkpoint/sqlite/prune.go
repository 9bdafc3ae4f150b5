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
	if opts.Keep < 1 {
		return graph.PruneStats{}, fmt.Errorf("sqlite: prune: keep %d: must be at least 1", opts.Keep)
	}
	type threadNS struct{ thread, ns string }
	var total graph.PruneStats
	var after threadNS
	for {
		// Keyset pages: memory stays one page of names, whatever the
		// number of threads.
		spaces, err := queryAll(ctx, s.db, func(rows *sql.Rows) (t threadNS, err error) {
			err = rows.Scan(&t.thread, &t.ns)
			return t, err
		}, `SELECT DISTINCT thread_id, ns FROM checkpoints WHERE (thread_id, ns) > (?, ?)
ORDER BY thread_id, ns LIMIT ?`, after.thread, after.ns, graph.PruneSpacePage)
		if err != nil {
			return total, fmt.Errorf("sqlite: prune: list threads: %w", err)
		}
		for _, sp := range spaces {
			pins, err := opts.Pins(ctx, sp.thread)
			if err != nil {
				return total, fmt.Errorf("sqlite: prune: %w", err)
			}
			var st graph.PruneStats
			fn := func(ctx context.Context, tx *sql.Tx) (err error) {
				st, err = pruneNamespace(ctx, tx, sp.thread, sp.ns, pins, opts)
				return err
			}
			if opts.DryRun {
				err = s.read(ctx, func(tx *sql.Tx) error { return fn(ctx, tx) })
			} else {
				err = s.writer.Do(ctx, fn)
			}
			if err != nil {
				return total, fmt.Errorf("sqlite: prune %s/%s: %w", sp.thread, sp.ns, err)
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
	type row struct {
		node graph.PruneNode
		size int64
	}
	cps, err := queryAll(ctx, tx, func(rows *sql.Rows) (r row, err error) {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return r, err
		}
		cp, err := graph.DecodeCheckpoint(body)
		r.node, r.size = opts.Node(&cp, pins), int64(len(body))
		return r, err
	}, `SELECT body FROM checkpoints WHERE thread_id = ? AND ns = ?`, thread, ns)
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("checkpoints: %w", err)
	}
	type blobRow struct {
		blob graph.PruneBlob
		size int64
	}
	blobs, err := queryAll(ctx, tx, func(rows *sql.Rows) (b blobRow, err error) {
		err = rows.Scan(&b.blob.Field, &b.blob.Version, &b.blob.Delta, &b.blob.Base, &b.size)
		return b, err
	}, `SELECT field, version, delta, base, length(data) FROM checkpoint_blobs WHERE thread_id = ? AND ns = ?`, thread, ns)
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("blobs: %w", err)
	}
	type writeRow struct {
		n    int
		size int64
	}
	writes := make(map[string]writeRow)
	_, err = queryAll(ctx, tx, func(rows *sql.Rows) (struct{}, error) {
		var id string
		var w writeRow
		err := rows.Scan(&id, &w.n, &w.size)
		writes[id] = w
		return struct{}{}, err
	}, `SELECT checkpoint_id, count(*), sum(length(value)) FROM checkpoint_writes
WHERE thread_id = ? AND ns = ? GROUP BY checkpoint_id`, thread, ns)
	if err != nil {
		return graph.PruneStats{}, fmt.Errorf("writes: %w", err)
	}

	nodes := make([]graph.PruneNode, len(cps))
	sizes := make(map[string]int64, len(cps))
	for i, c := range cps {
		nodes[i], sizes[c.node.ID] = c.node, c.size
	}
	pb := make([]graph.PruneBlob, len(blobs))
	for i, b := range blobs {
		pb[i] = b.blob
	}
	dropIDs, dropBlobs := graph.PlanPrune(nodes, pb, opts.Keep)
	var st graph.PruneStats
	if len(dropIDs) > 0 {
		st.Threads = 1
	}
	for _, id := range dropIDs {
		st.Checkpoints++
		st.Writes += writes[id].n
		st.Bytes += sizes[id] + writes[id].size
		if opts.DryRun {
			continue
		}
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
		b := blobs[i]
		st.Blobs++
		st.Bytes += b.size
		if opts.DryRun {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_blobs WHERE thread_id = ? AND ns = ? AND field = ? AND version = ?`,
			thread, ns, b.blob.Field, b.blob.Version); err != nil {
			return st, fmt.Errorf("blob %s@%s: %w", b.blob.Field, b.blob.Version, err)
		}
	}
	return st, nil
}
