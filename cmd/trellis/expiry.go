package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/runs"
)

// expiryJob is a human request whose deadline is due at the job's
// scheduled time. Its arguments hold ids only. The kind keeps its first
// name, and an approval keeps its first field, so that jobs enqueued
// before elicitations had deadlines are still read as they were.
type expiryJob struct {
	UserID string `json:"user_id"`
	// ApprovalID is an approval's id; RequestKind and RequestID name a
	// request of another kind.
	ApprovalID  string             `json:"approval_id,omitempty"`
	RequestKind events.PendingKind `json:"request_kind,omitempty"`
	RequestID   string             `json:"request_id,omitempty"`
}

func (expiryJob) Kind() string { return "approval_expiry" }

// newExpiryJob is the job of the user's request id of kind.
func newExpiryJob(kind events.PendingKind, userID, id string) expiryJob {
	if kind == events.PendingApproval {
		return expiryJob{UserID: userID, ApprovalID: id}
	}
	return expiryJob{UserID: userID, RequestKind: kind, RequestID: id}
}

// request is the kind and id of the job's request.
func (j expiryJob) request() (events.PendingKind, string) {
	if j.ApprovalID != "" {
		return events.PendingApproval, j.ApprovalID
	}
	return j.RequestKind, j.RequestID
}

// expiryAttempts bounds the attempts at one deadline: a process shutting
// down or a database away for a while must not lose it, so the attempts
// span more than an hour (DefaultBackoff, at most 5 minutes apart).
const expiryAttempts = 25

// errNotWired: a job came before the run service was built; it is
// tried again a second later.
var errNotWired = errors.New("expiry: the run service is not ready yet")

// expirer keeps human requests' deadlines as durable jobs scheduled at them:
// whichever process is alive at the deadline applies the outcome, once,
// through the run service (runs.Service.Expire).
type expirer struct {
	log   *slog.Logger
	queue *jobs.Queue
	runs  atomic.Pointer[runs.Service] // set by wire; the queue may start working before
}

// openExpirer registers the deadline jobs with ws.
func openExpirer(ws *jobs.Workers, log *slog.Logger) *expirer {
	e := &expirer{log: log}
	jobs.Handle(ws, e.work, jobs.HandleOptions{Timeout: time.Minute})
	return e
}

// wire gives the expirer the queue its jobs go to and the run service
// that applies them.
func (e *expirer) wire(queue *jobs.Queue, svc *runs.Service) {
	e.queue = queue
	e.runs.Store(svc)
}

// schedule is runs.Config.ScheduleExpiry: one job per request, however
// often it is asked for, bounded in time as the run that asks goes on.
func (e *expirer) schedule(ctx context.Context, kind events.PendingKind, userID, id string, at time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := e.queue.Enqueue(ctx, newExpiryJob(kind, userID, id),
		jobs.EnqueueOptions{Unique: true, MaxAttempts: expiryAttempts, Delay: max(time.Until(at), time.Millisecond)})
	if err != nil {
		return fmt.Errorf("expiry: schedule %s %s: %w", kind, id, err)
	}
	return nil
}

// work is the deadline job. A deadline not due yet (the clocks of two
// processes differ) is tried again, as is a failure to apply it.
func (e *expirer) work(ctx context.Context, j jobs.Job[expiryJob]) error {
	svc := e.runs.Load()
	if svc == nil {
		return errNotWired
	}
	kind, id := j.Args.request()
	return svc.Expire(ctx, kind, j.Args.UserID, id)
}
