package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/trellis-ai/trellis/api/metrics"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/jobs"
)

const pruneUsage = `Usage: trellis prune [flags]

Removes old checkpoints: each branch of each conversation keeps its newest
--keep, the one each of its turns started from (where an edit or a retry
forks), and every older one their delta chains still read. Every
conversation still loads, resumes and forks from what is kept. Safe while
the server runs; a prune stopped halfway has pruned some conversations
whole and left the others untouched.

Flags:
`

// runPrune prunes the checkpoints of the embedded default's data directory,
// or of the PostgreSQL database at DATABASE_URL, as serve stores them.
func runPrune(ctx context.Context, args []string, sys stdio) error {
	fs := newFlags("prune", pruneUsage, sys)
	var d recordFlags
	d.add(fs, sys.getenv)
	keep := fs.Int("keep", defaultKeepCheckpoints, "checkpoints each branch keeps, at least 1")
	dryRun := fs.Bool("dry-run", false, "say what would go, and delete nothing")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError{fmt.Errorf("prune: unexpected arguments %q", fs.Args())}
	}
	if *keep < 1 {
		return usageError{fmt.Errorf("prune: --keep %d: want at least 1", *keep)}
	}
	saver, closeSaver, err := openPruner(ctx, d.data, d.databaseURL)
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	defer closeSaver()
	st, err := saver.Prune(ctx, graph.PruneOptions{Keep: *keep, DryRun: *dryRun, KeepInputs: true})
	verb := "removed"
	if *dryRun {
		verb = "would remove"
	}
	// What a prune stopped by an error did is still worth saying.
	fmt.Fprintf(sys.out, "%s %d checkpoints of %d threads (%d blobs, %d pending writes), %s bytes\n",
		verb, st.Checkpoints, st.Threads, st.Blobs, st.Writes, strconv.FormatInt(st.Bytes, 10))
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	return nil
}

// defaultKeepCheckpoints is what trellis prune keeps per branch unless told.
const defaultKeepCheckpoints = 50

// checkpointSizer is a saver that can say how many bytes it stores.
type checkpointSizer interface {
	Bytes(ctx context.Context) (int64, error)
}

// openPruner opens the checkpointer serve uses, without creating one: a
// prune of a data directory that holds none is a mistake.
func openPruner(ctx context.Context, dataDir, dbURL string) (graph.Pruner, func(), error) {
	if dbURL != "" {
		s, err := postgres.Open(ctx, dbURL)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	path := filepath.Join(dataDir, "checkpoints.db")
	if _, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("data dir %s: %w", dataDir, err)
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	return s, func() { _ = s.Close() }, nil
}

// checkpointPruneArgs are the arguments of the periodic job that prunes
// checkpoints as trellis prune does.
type checkpointPruneArgs struct{}

// Kind implements jobs.Args.
func (checkpointPruneArgs) Kind() string { return "checkpoint_prune" }

// newCheckpointPrune registers the checkpoint prune job with ws and returns
// its hourly run, or nothing when --keep-checkpoints is 0 or the saver
// cannot prune. The job also measures the bytes stored, for
// trellis_checkpoint_bytes: a scan of the tables, too dear per request.
func newCheckpointPrune(ws *jobs.Workers, cfg serveConfig, saver graph.Checkpointer, m *metrics.Collector, log *slog.Logger) []jobs.Periodic {
	p, ok := saver.(graph.Pruner)
	if cfg.keepCheckpoints <= 0 || !ok {
		return nil
	}
	backend := "sqlite"
	if cfg.databaseURL != "" {
		backend = "postgres"
	}
	jobs.Handle(ws, func(ctx context.Context, _ jobs.Job[checkpointPruneArgs]) error {
		st, err := p.Prune(ctx, graph.PruneOptions{Keep: cfg.keepCheckpoints, KeepInputs: true})
		if st.Checkpoints > 0 {
			log.LogAttrs(ctx, slog.LevelInfo, "checkpoint prune", slog.Int("threads", st.Threads),
				slog.Int("checkpoints", st.Checkpoints), slog.Int64("bytes", st.Bytes))
		}
		if err != nil {
			return fmt.Errorf("checkpoint prune: %w", err)
		}
		if sz, ok := saver.(checkpointSizer); ok {
			n, err := sz.Bytes(ctx)
			if err != nil {
				return fmt.Errorf("checkpoint prune: %w", err)
			}
			m.CheckpointBytes(backend, n)
		}
		return nil
	}, jobs.HandleOptions{})
	return []jobs.Periodic{{Every: time.Hour, Args: checkpointPruneArgs{}, RunOnStart: true}}
}
