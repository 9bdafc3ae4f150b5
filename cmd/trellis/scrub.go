package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/internal/sqlopen"
	"github.com/trellis-ai/trellis/llm"
)

// scrubArgs is the job that empties the write-ahead logs of the data
// directory's SQLite files once a delete could not: another connection
// had a log in use. After is the scrub job that was running when this
// one was asked for, which may have emptied the logs before the delete
// wrote; the two may run at once, as emptying a log twice does no harm.
type scrubArgs struct {
	After int64 `json:"after,omitempty"`
}

// Kind implements jobs.Args.
func (scrubArgs) Kind() string { return "scrub_write_ahead_logs" }

const (
	// scrubWithin is how long one attempt of the job keeps trying,
	// each try waiting at most sqlopen.WALWait, so that a log busy with
	// reads a moment ago is emptied between two of them.
	scrubWithin = 10 * time.Second
	// scrubAttempts: with the queue's backoff, about a day.
	scrubAttempts = 300
)

// scrubber empties the write-ahead logs after a delete (runs.Config.Scrub):
// at once when it can, else by a durable job, so the deleted text goes
// from the files even when the delete is answered first.
type scrubber struct {
	wals  walTruncaters
	queue *jobs.Queue
	log   *slog.Logger
}

// newScrubber registers the scrub job with ws; wire it before deleting.
func newScrubber(ws *jobs.Workers) *scrubber {
	s := &scrubber{}
	jobs.Handle(ws, func(ctx context.Context, _ jobs.Job[scrubArgs]) error {
		return s.wals.truncateWithin(ctx, scrubWithin)
	}, jobs.HandleOptions{})
	return s
}

// wire gives the scrubber the files it empties and the queue of its job.
func (s *scrubber) wire(wals walTruncaters, queue *jobs.Queue, log *slog.Logger) {
	s.wals, s.queue, s.log = wals, queue, log
}

// scrub empties the logs, or leaves it to the job when one is in use;
// one job stands for every delete that comes while it waits.
func (s *scrubber) scrub(ctx context.Context) error {
	err := s.wals.TruncateWAL(ctx)
	if !errors.Is(err, sqlopen.ErrWALBusy) {
		return err
	}
	id, qerr := s.queue.Debounce(ctx, scrubArgs{}, jobs.DebounceOptions{
		MaxAttempts: scrubAttempts,
		Follow:      func(running int64) jobs.Args { return scrubArgs{After: running} },
	})
	if qerr != nil {
		return fmt.Errorf("%w; and the job to try again: %w", err, qerr)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "a write-ahead log is in use; a job empties it once it is free",
		slog.Int64("job_id", id), slog.String("error", err.Error()))
	return nil
}

// truncateWithin tries TruncateWAL until it succeeds or within has
// passed.
func (ws walTruncaters) truncateWithin(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	err := llm.Backoff{Base: sqlopen.WALWait, Max: time.Second}.Run(ctx, func(ctx context.Context) error {
		last = ws.TruncateWAL(ctx)
		return last
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
