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

// retentionArgs are the arguments of the periodic job that erases the
// conversations idle longer than the retention policy keeps them.
type retentionArgs struct{}

// Kind implements jobs.Args.
func (retentionArgs) Kind() string { return "conversation_retention" }

// retentionEvery is how often the retention job runs: a conversation
// outlives its policy by an hour at most.
const retentionEvery = time.Hour

// retention erases, through the run service, each conversation no one
// has written to for longer than keep: the deletion a user's own is
// (its live run stopped wherever it runs, its documents' files, its
// checkpoints, its record, the SQLite logs scrubbed).
type retention struct {
	keep  time.Duration
	ready chan struct{}
	runs  *runs.Service
	idle  func(ctx context.Context, before time.Time, page store.Page) (store.ConversationPage, error)
	log   *slog.Logger
}

// newRetention registers the retention job with ws and returns its
// periodic run, or nothing when keep is 0 (keep everything).
func newRetention(ws *jobs.Workers, keep time.Duration) (*retention, []jobs.Periodic) {
	if keep <= 0 {
		return nil, nil
	}
	r := &retention{keep: keep, ready: make(chan struct{})}
	jobs.Handle(ws, r.erase, jobs.HandleOptions{})
	return r, []jobs.Periodic{{Every: retentionEvery, Args: retentionArgs{}, RunOnStart: true}}
}

// wire gives the job what it erases through, and lets it run.
func (r *retention) wire(svc *runs.Service, st store.Conversations, log *slog.Logger) {
	r.runs, r.idle, r.log = svc, st.IdleConversations, log
	close(r.ready)
}

// erase is the retention job. A conversation with a run going on is left
// for a later run of the job; every other one found is deleted. Each
// deletion can be done again, so an attempt cut short by a crash is
// finished by the next.
func (r *retention) erase(ctx context.Context, _ jobs.Job[retentionArgs]) error {
	select {
	case <-r.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
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
