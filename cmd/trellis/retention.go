package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// retentionArgs are the arguments of the periodic job that applies the
// retention policy: it erases the conversations idle longer than the
// policy keeps them, and compacts the events of runs that ended longer
// ago than it keeps them whole.
type retentionArgs struct{}

// Kind implements jobs.Args.
func (retentionArgs) Kind() string { return "conversation_retention" }

// retentionEvery is how often the retention job runs: a conversation
// outlives its policy by an hour at most.
const retentionEvery = time.Hour

// compactBatch is how many runs' events one transaction compacts: it
// bounds how long the job holds SQLite's writer from the runs.
const compactBatch = 100

// days is n days.
func days(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }

// retention erases, through the run service, each conversation no one
// has written to for longer than keep: the deletion a user's own is
// (its live run stopped wherever it runs, its documents' files, its
// checkpoints, its record, the SQLite logs scrubbed). It compacts the
// events of each run that ended longer than compactAfter ago
// (store.Events.CompactEvents).
type retention struct {
	keep, compactAfter time.Duration
	ready              chan struct{}
	runs               *runs.Service
	idle               func(ctx context.Context, before time.Time, page store.Page) (store.ConversationPage, error)
	compact            func(ctx context.Context, before time.Time, limit int) (int, int, error)
	log                *slog.Logger
}

// newRetention registers the retention job with ws and returns its
// periodic run, or nothing when keep and compactAfter are both 0 (keep
// everything whole).
func newRetention(ws *jobs.Workers, keep, compactAfter time.Duration) (*retention, []jobs.Periodic) {
	if keep <= 0 && compactAfter <= 0 {
		return nil, nil
	}
	r := &retention{keep: keep, compactAfter: compactAfter, ready: make(chan struct{})}
	jobs.Handle(ws, r.apply, jobs.HandleOptions{})
	return r, []jobs.Periodic{{Every: retentionEvery, Args: retentionArgs{}, RunOnStart: true}}
}

// wire gives the job what it erases and compacts through, and lets it
// run.
func (r *retention) wire(svc *runs.Service, st store.Store, log *slog.Logger) {
	r.runs, r.idle, r.compact, r.log = svc, st.IdleConversations, st.CompactEvents, log
	close(r.ready)
}

// apply is the retention job: the erasure, then the compaction, each
// when the policy asks for it.
func (r *retention) apply(ctx context.Context, _ jobs.Job[retentionArgs]) error {
	select {
	case <-r.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	var errs []error
	if r.keep > 0 {
		errs = append(errs, r.erase(ctx))
	}
	if r.compactAfter > 0 {
		errs = append(errs, r.compactEvents(ctx))
	}
	return errors.Join(errs...)
}

// erase deletes the idle conversations. A conversation with a run going
// on is left for a later run of the job; every other one found is
// deleted. Each deletion can be done again, so an attempt cut short by a
// crash is finished by the next.
func (r *retention) erase(ctx context.Context) error {
	before := time.Now().Add(-r.keep)
	erased, kept := 0, 0
	var errs []error
	for page := (store.Page{Limit: store.MaxLimit}); ; {
		p, err := r.idle(ctx, before, page)
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		for _, c := range p.Conversations {
			if c.Status == store.RunRunning {
				kept++
				continue
			}
			err := r.runs.DeleteConversation(ctx, c.UserID, c.ID)
			switch {
			case err == nil:
				erased++
			case errors.Is(err, store.ErrNotFound): // deleted meanwhile
			default:
				errs = append(errs, fmt.Errorf("retention: conversation %s: %w", c.ID, err))
			}
		}
		if page.Cursor = p.NextCursor; page.Cursor == "" {
			break
		}
	}
	if erased > 0 || kept > 0 {
		r.log.LogAttrs(ctx, slog.LevelInfo, "retention", slog.Int("erased", erased), slog.Int("running_kept", kept),
			slog.Time("idle_before", before))
	}
	return errors.Join(errs...)
}

// compactEvents compacts, a batch at a time, the events of every run
// that ended before the policy's cut. Each batch commits on its own: a
// crash loses none of the work done, and the next run of the job goes
// on from there.
func (r *retention) compactEvents(ctx context.Context) error {
	before := time.Now().Add(-r.compactAfter)
	total, deleted := 0, 0
	for {
		n, d, err := r.compact(ctx, before, compactBatch)
		total, deleted = total+n, deleted+d
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		if n < compactBatch {
			break
		}
	}
	if total > 0 {
		r.log.LogAttrs(ctx, slog.LevelInfo, "retention: events compacted", slog.Int("runs", total), slog.Int("events_deleted", deleted),
			slog.Time("ended_before", before))
	}
	return nil
}
