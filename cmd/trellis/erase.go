package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/trellis-ai/trellis/api/me"
	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/documents/workspace"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// eraseArgs are the arguments of the job that erases a user.
type eraseArgs struct {
	UserID string `json:"user_id"`
}

// Kind implements jobs.Args.
func (eraseArgs) Kind() string { return "user_erase" }

// eraseAttempts is how many times an erasure is tried before it is
// reported failed: with the queue's backoff, about a day and a half.
const eraseAttempts = 25

// walTruncater is an SQLite database of the data directory, whose
// write-ahead log the erasure empties.
type walTruncater interface {
	TruncateWAL(ctx context.Context) error
}

// walTruncaters are every SQLite database of the data directory.
type walTruncaters []walTruncater

// TruncateWAL empties each one's write-ahead log: every one it can,
// whichever another connection keeps in use.
func (ws walTruncaters) TruncateWAL(ctx context.Context) error {
	var errs []error
	for _, w := range ws {
		errs = append(errs, w.TruncateWAL(ctx))
	}
	return errors.Join(errs...)
}

// eraseRecord is what the erasure needs of the record.
type eraseRecord interface {
	store.Conversations
	store.Users
}

// eraser is me.Eraser over the job queue: DELETE /me enqueues a durable
// job, which erase works, here or in another process, again after a
// crash. Its fields are set by wire once every service exists; the job
// waits for that.
type eraser struct {
	queue *jobs.Queue
	ready chan struct{}

	runs *runs.Service
	st   eraseRecord
	docs *ingest.Service       // nil: documents are off
	work *workspace.Workspaces // nil: the workspace is off
	cog  *cognition.Service    // nil: memory is off
	wals walTruncaters         // the SQLite files; none on PostgreSQL
	log  *slog.Logger
}

var _ me.Eraser = (*eraser)(nil)

// newEraser registers the erasure's job with ws; wire the eraser before
// the server takes requests.
func newEraser(ws *jobs.Workers) *eraser {
	e := &eraser{ready: make(chan struct{})}
	jobs.Handle(ws, e.erase, jobs.HandleOptions{})
	return e
}

// wire gives the eraser what it erases through, and lets its jobs run.
func (e *eraser) wire(queue *jobs.Queue, svc *runs.Service, st eraseRecord, docs *ingest.Service, work *workspace.Workspaces, cog *cognition.Service, wals walTruncaters, log *slog.Logger) {
	e.queue, e.runs, e.st, e.docs, e.work, e.cog, e.wals, e.log = queue, svc, st, docs, work, cog, wals, log
	close(e.ready)
}

// Erase implements me.Eraser: it marks the user as being erased, so
// that nothing new of theirs is stored from now on (store.Users.BeginErasure),
// and enqueues the user's erasure unless one waits or runs already.
func (e *eraser) Erase(ctx context.Context, userID string) (me.Erasure, error) {
	if err := e.st.BeginErasure(ctx, userID); err != nil {
		return me.Erasure{}, fmt.Errorf("erase %s: %w", userID, err)
	}
	if _, err := e.queue.Enqueue(ctx, eraseArgs{UserID: userID}, jobs.EnqueueOptions{UniqueUnfinished: true, MaxAttempts: eraseAttempts}); err != nil {
		return me.Erasure{}, fmt.Errorf("erase %s: %w", userID, err)
	}
	return e.Erasure(ctx, userID)
}

// Erasure implements me.Eraser: the user's newest erasure job, as the
// API shows it.
func (e *eraser) Erasure(ctx context.Context, userID string) (me.Erasure, error) {
	j, err := e.queue.Newest(ctx, eraseArgs{}.Kind(), "user_id", userID)
	if errors.Is(err, jobs.ErrNotFound) {
		return me.Erasure{}, me.ErrNoErasure
	}
	if err != nil {
		return me.Erasure{}, err
	}
	out := me.Erasure{Attempt: j.Attempt, RequestedAt: j.CreatedAt.UTC(), Error: j.Err}
	if j.Progress != nil {
		out.Progress = new(me.ErasureProgress)
		if err := json.Unmarshal(j.Progress, out.Progress); err != nil {
			return me.Erasure{}, fmt.Errorf("erasure of %s: progress: %w", userID, err)
		}
	}
	switch j.State {
	case jobs.StateRunning:
		out.Status = me.ErasureRunning
	case jobs.StateCompleted:
		out.Status = me.ErasureCompleted
		at := j.FinalizedAt.UTC()
		out.CompletedAt = &at
	case jobs.StateCancelled, jobs.StateDiscarded:
		out.Status = me.ErasureFailed
	default:
		out.Status = me.ErasureQueued
		if j.Attempt > 0 {
			out.Status = me.ErasureRetrying
		}
	}
	return out, nil
}

// erase is the erasure job. From the request on, nothing new of the
// user's is stored (Erase marks the user), so what the job finds is all
// there is but for writes that were under way as the mark was set. Every
// step can run again (a retry, or the rescue of a job whose process
// died) and finishes what an earlier attempt left:
//
//  1. each conversation, through the run service: its run is stopped
//     first, in whichever process of the cluster runs it, and waited
//     for; then its documents' files, its checkpoints and its record go
//     (runs.Service.DeleteConversation);
//  2. the user's files that no conversation names any more (their
//     workspace files among them), and the projects they own with
//     those projects' files;
//  3. the user's learning jobs, whose arguments hold their words;
//  4. each conversation again, for one that a write under way as the
//     user was marked made after step 1 listed them;
//  5. the rest of the record: memories, profile, their share of the
//     tool stats, their workspace files' rows and project memberships,
//     and the mark, so that the user may start afresh
//     (store.Users);
//  6. on SQLite, each database's write-ahead log, emptied into its file,
//     where secure_delete has zeroed what was deleted.
func (e *eraser) erase(ctx context.Context, j jobs.Job[eraseArgs]) error {
	select {
	case <-e.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	user := j.Args.UserID
	// An erasure enqueued before the mark existed, rescued now, marks
	// the user itself.
	if err := e.st.BeginErasure(ctx, user); err != nil {
		return fmt.Errorf("erase %s: %w", user, err)
	}
	p := erasureProgress{queue: e.queue, job: j.ID, ErasureProgress: me.ErasureProgress{Steps: len(me.ErasureSteps)}}
	var late int
	steps := map[string]func() error{
		"conversations": func() error { return e.deleteConversations(ctx, user, &p) },
		"files": func() error {
			if e.work != nil {
				if err := e.work.EraseProjects(ctx, user); err != nil {
					return err
				}
			}
			if e.docs == nil {
				return nil
			}
			return e.docs.DeleteUserFiles(ctx, user)
		},
		"learning_jobs": func() error {
			if e.cog == nil {
				return nil
			}
			return e.cog.PurgeLearning(ctx, user)
		},
		"late_conversations": func() error {
			before := p.ConversationsDeleted
			err := e.deleteConversations(ctx, user, &p)
			late = p.ConversationsDeleted - before
			return err
		},
		"record": func() error {
			_, err := e.st.EraseUser(ctx, user)
			return err
		},
		"write_ahead_logs": func() error { return e.wals.truncateWithin(ctx, scrubWithin) },
	}
	for _, step := range me.ErasureSteps {
		if err := p.at(ctx, step); err != nil {
			return fmt.Errorf("erase %s: %w", user, err)
		}
		if err := steps[step](); err != nil {
			return fmt.Errorf("erase %s: %s: %w", user, step, err)
		}
		p.StepsDone++
	}
	if err := p.at(ctx, me.ErasureDone); err != nil {
		return fmt.Errorf("erase %s: %w", user, err)
	}
	e.log.LogAttrs(ctx, slog.LevelInfo, "user erased", slog.String("user_id", user), slog.Int("attempt", j.Attempt),
		slog.Int("late_conversations", late))
	return nil
}

// erasureProgress is an attempt's progress, recorded with its job for
// GET /me/erasure to show.
type erasureProgress struct {
	me.ErasureProgress
	queue *jobs.Queue
	job   int64
}

// at records that the attempt is at step.
func (p *erasureProgress) at(ctx context.Context, step string) error {
	p.Step = step
	return p.save(ctx)
}

// save records the progress as it is.
func (p *erasureProgress) save(ctx context.Context) error {
	return p.queue.SetProgress(ctx, p.job, p.ErasureProgress)
}

// deleteConversations deletes each conversation of the user's through
// the run service, until none is left, counting each in p.
func (e *eraser) deleteConversations(ctx context.Context, user string, p *erasureProgress) error {
	for {
		page, err := e.st.ListConversations(ctx, user, store.Page{Limit: 50})
		if err != nil {
			return err
		}
		if len(page.Conversations) == 0 {
			return nil
		}
		for _, c := range page.Conversations {
			err := e.runs.DeleteConversation(ctx, user, c.ID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("conversation %s: %w", c.ID, err)
			}
			p.ConversationsDeleted++
			if err := p.save(ctx); err != nil {
				return err
			}
		}
	}
}
