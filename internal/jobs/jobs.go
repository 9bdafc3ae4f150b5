package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// Args are a job's arguments, stored as JSON; Kind names the handler
// (Handle) that works them and must be stable across releases.
type Args interface {
	Kind() string
}

// Job is one attempt at a job, as its handler sees it.
type Job[A Args] struct {
	ID int64
	// Attempt counts from 1; MaxAttempts is the last one.
	Attempt, MaxAttempts int
	Args                 A
}

// Workers holds the handlers of a queue, registered before it opens.
type Workers struct {
	w *river.Workers
}

// NewWorkers returns an empty set of handlers.
func NewWorkers() *Workers { return &Workers{w: river.NewWorkers()} }

// HandleOptions tune one kind of job; the zero value is the queue's
// defaults.
type HandleOptions struct {
	// Timeout bounds one attempt (its ctx is cancelled then); 0 is
	// Config.JobTimeout.
	Timeout time.Duration
	// Backoff is the wait before attempt n+1 after attempt n failed; nil
	// is DefaultBackoff.
	Backoff func(attempt int) time.Duration
}

// DefaultBackoff waits 1 s after the first failure and doubles each
// time, to at most 5 minutes, with up to 10% jitter so retries of many
// jobs spread out.
func DefaultBackoff(attempt int) time.Duration {
	d := time.Second << min(max(attempt-1, 0), 9)
	d = min(d, 5*time.Minute)
	return d + time.Duration(rand.Int64N(int64(d)/10+1))
}

// Handle registers h for jobs of A's kind. It panics if the kind has a
// handler already: a wiring mistake, found at start.
func Handle[A Args](ws *Workers, h func(ctx context.Context, j Job[A]) error, opt HandleOptions) {
	if opt.Backoff == nil {
		opt.Backoff = DefaultBackoff
	}
	river.AddWorker(ws.w, &worker[A]{h: h, opt: opt})
}

// worker adapts a handler to River.
type worker[A Args] struct {
	river.WorkerDefaults[A]
	h   func(ctx context.Context, j Job[A]) error
	opt HandleOptions
}

func (w *worker[A]) Work(ctx context.Context, j *river.Job[A]) error {
	return w.h(ctx, Job[A]{ID: j.ID, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, Args: j.Args})
}

func (w *worker[A]) NextRetry(j *river.Job[A]) time.Time {
	return time.Now().Add(w.opt.Backoff(j.Attempt))
}

func (w *worker[A]) Timeout(*river.Job[A]) time.Duration { return w.opt.Timeout }

// Permanent marks err as one no retry can fix: the job ends at once,
// cancelled, with err recorded.
func Permanent(err error) error { return river.JobCancel(err) }

// Config tunes a queue; the zero value works.
type Config struct {
	// Concurrency is how many jobs this process works at once. Default 4.
	Concurrency int
	// JobTimeout bounds one attempt of a job. Default 5 minutes.
	JobTimeout time.Duration
	// MaxAttempts is how many times a job is tried before it is
	// discarded. Default 8.
	MaxAttempts int
	// RescueAfter is how long after an attempt began a job still marked
	// running is taken for abandoned (its process died) and run again.
	// It must exceed JobTimeout. Default JobTimeout + 1 minute.
	RescueAfter time.Duration
	// PollInterval is how often idle workers look for jobs that no
	// notification announced (SQLite has no notifications; PostgreSQL's
	// LISTEN/NOTIFY wakes them at once). Default 1 s; the least time
	// between two looks is 100 ms, or PollInterval if shorter.
	PollInterval time.Duration
	// Logger receives River's logs; nil discards them.
	Logger *slog.Logger
	// Periodic are jobs enqueued on a schedule. Of the processes sharing
	// a queue, only the one River elects leader enqueues them, so each
	// runs once a period, not once a process.
	Periodic []Periodic
}

// Periodic is a job enqueued every Every with Args.
type Periodic struct {
	Every time.Duration
	Args  Args
	// RunOnStart enqueues one as the leader starts, too.
	RunOnStart bool
}

func (c Config) river(ws *Workers) *river.Config {
	c.Concurrency = cmpOr(c.Concurrency, 4)
	c.JobTimeout = cmpOr(c.JobTimeout, 5*time.Minute)
	c.MaxAttempts = cmpOr(c.MaxAttempts, 8)
	c.RescueAfter = cmpOr(c.RescueAfter, c.JobTimeout+time.Minute)
	c.PollInterval = cmpOr(c.PollInterval, time.Second)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	var periodic []*river.PeriodicJob
	for _, p := range c.Periodic {
		args := p.Args
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(p.Every),
			func() (river.JobArgs, *river.InsertOpts) {
				return args, nil
			}, &river.PeriodicJobOpts{RunOnStart: p.RunOnStart}))
	}
	return &river.Config{
		PeriodicJobs:         periodic,
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: c.Concurrency}},
		Workers:              ws.w,
		JobTimeout:           c.JobTimeout,
		MaxAttempts:          c.MaxAttempts,
		RescueStuckJobsAfter: c.RescueAfter,
		FetchPollInterval:    c.PollInterval,
		FetchCooldown:        min(c.PollInterval, 100*time.Millisecond),
		Logger:               c.Logger,
	}
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// client is what Queue asks of River's client, whichever its driver.
type client interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	JobRetry(ctx context.Context, id int64) (*rivertype.JobRow, error)
	JobCancel(ctx context.Context, id int64) (*rivertype.JobRow, error)
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	JobDeleteMany(ctx context.Context, params *river.JobDeleteManyParams) (*river.JobDeleteManyResult, error)
}

// Queue is a durable job queue and this process's workers of it.
type Queue struct {
	c     client
	close func() error
	name  string
	// db is the SQLite queue's database; nil on PostgreSQL.
	db *sql.DB
	// pool is the PostgreSQL queue's pool (the caller's); nil on SQLite.
	pool *pgxpool.Pool

	// waitMu guards waiting: the job each Debounce key (waitKey) last
	// stored or found scheduled, and when it is due. A call while it is
	// not due yet reads that job's state, one row, rather than inserting
	// again, which on SQLite is a write through the queue's one
	// connection and costs several times the read.
	waitMu  sync.Mutex
	waiting map[string]waitingJob
}

type waitingJob struct {
	id  int64
	due time.Time
}

// maxWaiting bounds Queue.waiting: past it, the entries already due are
// dropped, and all of them if none is.
const maxWaiting = 10_000

// SQLite opens (creating it) the queue in the SQLite database file at
// path, which should be a file of its own beside the store's, and
// migrates River's schema into it. River's SQLite driver wants one
// connection, so the pool holds one.
func SQLite(ctx context.Context, path string, ws *Workers, cfg Config) (*Queue, error) {
	db, err := sqlopen.SQLite(path)
	if err != nil {
		return nil, fmt.Errorf("jobs: sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	q, err := sqliteQueue(ctx, db, ws, cfg)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("jobs: sqlite %s: %w", path, err)
	}
	return q, nil
}

func sqliteQueue(ctx context.Context, db *sql.DB, ws *Workers, cfg Config) (*Queue, error) {
	driver := riversqlite.New(db)
	if err := migrate(ctx, driver); err != nil {
		return nil, err
	}
	rc := cfg.river(ws)
	rc.PollOnly = true // SQLite has no LISTEN/NOTIFY
	c, err := river.NewClient(driver, rc)
	if err != nil {
		return nil, err
	}
	return &Queue{c: c, close: db.Close, name: "sqlite", db: db}, nil
}

// Postgres opens the queue in pool's database, in the schema of its
// search_path, and migrates River's schema there. The pool stays the
// caller's; River holds one of its connections for LISTEN while started.
func Postgres(ctx context.Context, pool *pgxpool.Pool, ws *Workers, cfg Config) (*Queue, error) {
	driver := riverpgxv5.New(pool)
	if err := migrate(ctx, driver); err != nil {
		return nil, fmt.Errorf("jobs: postgres: %w", err)
	}
	c, err := river.NewClient(driver, cfg.river(ws))
	if err != nil {
		return nil, fmt.Errorf("jobs: postgres: %w", err)
	}
	return &Queue{c: c, close: func() error { return nil }, name: "postgres", pool: pool}, nil
}

// migrate brings River's schema up to date; River's migrator takes its
// own lock, so processes starting together do not race.
func migrate[TTx any](ctx context.Context, driver riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Start starts this process's workers; jobs enqueued before, by this or
// another process, are worked from now on. Cancelling ctx stops them as
// an impatient Stop would, so give it the process's context, not a
// request's.
func (q *Queue) Start(ctx context.Context) error {
	if err := q.c.Start(ctx); err != nil {
		return fmt.Errorf("jobs: start: %w", err)
	}
	return nil
}

// Stop stops taking jobs and waits for the running ones to finish, until
// ctx is done; then it cancels those still running (their attempts fail
// and are retried later, here or elsewhere) and returns ctx's error.
func (q *Queue) Stop(ctx context.Context) error {
	err := q.c.Stop(ctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		q.c.StopAndCancel(cctx)
		return fmt.Errorf("jobs: stop: running jobs cancelled: %w", ctx.Err())
	}
	return fmt.Errorf("jobs: stop: %w", err)
}

// TruncateWAL empties the SQLite queue's write-ahead log into its file
// (see sqlopen.TruncateWAL), so deleted jobs' arguments leave no trace
// in it. A queue on PostgreSQL has no such log of its own.
func (q *Queue) TruncateWAL(ctx context.Context) error {
	if q.db == nil {
		return nil
	}
	if err := sqlopen.TruncateWAL(ctx, q.db); err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	return nil
}

// Close releases what the queue opened (the SQLite file); Stop it first.
func (q *Queue) Close() error { return q.close() }

// EnqueueOptions tune one job; the zero value is the queue's defaults.
type EnqueueOptions struct {
	// MaxAttempts overrides Config.MaxAttempts for this job.
	MaxAttempts int
	// Unique makes the job one of its kind and arguments: while one
	// with the same arguments waits or runs, enqueueing another returns
	// it instead.
	Unique bool
	// UniqueUnfinished is Unique only while the job waits or runs: once
	// it has finished, enqueueing the same arguments makes a new job.
	UniqueUnfinished bool
	// Delay runs the job no sooner than this from now.
	Delay time.Duration
}

// Enqueue stores a job, to be worked by a started queue of this database,
// and returns its id.
func (q *Queue) Enqueue(ctx context.Context, args Args, opts EnqueueOptions) (int64, error) {
	io := &river.InsertOpts{MaxAttempts: opts.MaxAttempts}
	switch {
	case opts.Unique:
		io.UniqueOpts = river.UniqueOpts{ByArgs: true}
	case opts.UniqueUnfinished:
		io.UniqueOpts = river.UniqueOpts{ByArgs: true, ByState: unfinished}
	}
	if opts.Delay > 0 {
		io.ScheduledAt = time.Now().Add(opts.Delay)
	}
	res, err := q.c.Insert(ctx, args, io)
	if err != nil {
		return 0, fmt.Errorf("jobs: enqueue %s: %w", args.Kind(), err)
	}
	return res.Job.ID, nil
}

// DebounceOptions tune Debounce; the zero value runs the job at once.
type DebounceOptions struct {
	// Delay is how long from now the job waits, so that the work of
	// what comes meanwhile is done by the same job.
	Delay time.Duration
	// Now runs the job at once even when one waits already: its delay
	// is cut short.
	Now bool
	// Follow are the arguments of the job to store when the job of Args
	// is running (its id is running): that one may have read what there
	// was to do before this call's work was there. The handler of
	// Follow's kind should wait (Snooze) while running is still
	// running.
	Follow func(running int64) Args
	// MaxAttempts overrides Config.MaxAttempts for the job.
	MaxAttempts int
}

// Debounce stores a job of args to run after opts.Delay, unless one of
// the same kind and arguments waits already (scheduled, available or
// retryable): then that one stands for both, and returns its id. It
// suits work whose handler reads what there is to do when it runs, so
// that one job does the work many calls asked for. A job of args that
// is running stands for nothing new: the job of opts.Follow is stored
// instead, the same way (with no Follow, the running job is left to
// stand).
func (q *Queue) Debounce(ctx context.Context, args Args, opts DebounceOptions) (int64, error) {
	io := &river.InsertOpts{MaxAttempts: opts.MaxAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: unfinished}}
	key := ""
	if opts.Delay > 0 && !opts.Now {
		io.ScheduledAt = time.Now().Add(opts.Delay)
		key = waitKey(args)
		if id, ok := q.stillWaiting(ctx, key); ok {
			return id, nil
		}
	}
	for range 2 {
		res, err := q.c.Insert(ctx, args, io)
		if err != nil {
			return 0, fmt.Errorf("jobs: debounce %s: %w", args.Kind(), err)
		}
		j := res.Job
		if key != "" && j.State == rivertype.JobStateScheduled {
			q.remember(key, j.ID, j.ScheduledAt)
		}
		key = "" // a job to follow with is not the job of args
		switch {
		case !res.UniqueSkippedAsDuplicate:
			return j.ID, nil
		case j.State == rivertype.JobStateRunning && opts.Follow != nil:
			args, opts.Follow = opts.Follow(j.ID), nil
			continue
		case opts.Now && j.State == rivertype.JobStateScheduled:
			if _, err := q.c.JobRetry(ctx, j.ID); err != nil {
				return 0, fmt.Errorf("jobs: debounce %s: run job %d now: %w", args.Kind(), j.ID, err)
			}
		}
		return j.ID, nil
	}
	return 0, fmt.Errorf("jobs: debounce %s: the job to follow with is running too", args.Kind())
}

// waitKey is Debounce's key for args: its kind and JSON, what River's
// uniqueness by arguments compares; "" when args do not encode.
func waitKey(args Args) string {
	b, err := json.Marshal(args)
	if err != nil {
		return ""
	}
	return args.Kind() + "\x00" + string(b)
}

// stillWaiting returns the job Debounce remembers for key when it is
// not due yet and still waits (scheduled, available or retryable, as
// read now: cancelled, run early or deleted meanwhile, here or by
// another process, it does not). A waiting job reads what there is to do
// when it runs, after this call's work is stored, so it stands for the
// call as the duplicate Insert would.
func (q *Queue) stillWaiting(ctx context.Context, key string) (int64, bool) {
	if key == "" {
		return 0, false
	}
	q.waitMu.Lock()
	w, ok := q.waiting[key]
	if ok && !time.Now().Before(w.due) {
		delete(q.waiting, key)
		ok = false
	}
	q.waitMu.Unlock()
	if !ok {
		return 0, false
	}
	st, _, err := q.JobState(ctx, w.id)
	if err == nil && (st == StateScheduled || st == StateAvailable || st == StateRetryable) {
		return w.id, true
	}
	q.waitMu.Lock()
	if q.waiting[key] == w {
		delete(q.waiting, key)
	}
	q.waitMu.Unlock()
	return 0, false
}

// remember notes that the job id of key is scheduled, due at due.
func (q *Queue) remember(key string, id int64, due time.Time) {
	q.waitMu.Lock()
	defer q.waitMu.Unlock()
	if q.waiting == nil {
		q.waiting = make(map[string]waitingJob)
	}
	if len(q.waiting) >= maxWaiting {
		now := time.Now()
		for k, w := range q.waiting {
			if !now.Before(w.due) {
				delete(q.waiting, k)
			}
		}
		if len(q.waiting) >= maxWaiting {
			clear(q.waiting)
		}
	}
	q.waiting[key] = waitingJob{id: id, due: due}
}

// Snooze is what a handler returns to be run again after d, with no
// attempt counted: a job that must wait for another.
func Snooze(d time.Duration) error { return river.JobSnooze(d) }

// Running reports whether job id is running.
func (q *Queue) Running(ctx context.Context, id int64) (bool, error) {
	st, _, err := q.JobState(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return st == StateRunning, err
}

// Cancel cancels the job: one waiting will not run, one running has its
// context cancelled and is not retried. Cancelling a finished or unknown
// job does nothing.
func (q *Queue) Cancel(ctx context.Context, id int64) error {
	_, err := q.c.JobCancel(ctx, id)
	if err != nil && !errors.Is(err, river.ErrNotFound) {
		return fmt.Errorf("jobs: cancel %d: %w", id, err)
	}
	return nil
}

// CancelMatching cancels the jobs of kind not yet finished (waiting,
// scheduled, retrying or running) whose argument field (a top-level key
// of Args' JSON) is value, as Cancel does, and returns how many it
// cancelled. Deleting a document cancels its processing job so.
func (q *Queue) CancelMatching(ctx context.Context, kind, field, value string) (int, error) {
	ids, err := q.Unfinished(ctx, kind, field, value)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if err := q.Cancel(ctx, id); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

// Unfinished returns the ids of the jobs of kind not yet finished whose
// argument field is value (see CancelMatching), at most 1,000.
func (q *Queue) Unfinished(ctx context.Context, kind, field, value string) ([]int64, error) {
	params := river.NewJobListParams().Kinds(kind).States(unfinished...).
		Where(argIs, river.NamedArgs{"field": field, "value": value}).
		First(1000)
	res, err := q.c.JobList(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("jobs: list %s jobs of %s %s: %w", kind, field, value, err)
	}
	ids := make([]int64, len(res.Jobs))
	for i, j := range res.Jobs {
		ids[i] = j.ID
	}
	return ids, nil
}

// unfinished are the states of a job not yet finished.
var unfinished = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable,
	rivertype.JobStatePending, rivertype.JobStateRunning}

// argIs matches jobs whose argument @field is @value, in both databases.
const argIs = "CAST(args ->> @field AS TEXT) = @value"

// ErrRunning: a job Purge was to delete is still running; purge again
// once it has ended.
var ErrRunning = errors.New("jobs: a job to delete is still running")

// Purge cancels the jobs of kind whose argument field is value (see
// CancelMatching), then deletes every one of them that is not running,
// finished ones included, arguments and all, and returns how many it
// deleted: erasing a user purges the jobs that carry their words. A job
// still running (its cancel takes effect when its attempt returns) is
// kept, and Purge returns an error matching ErrRunning.
func (q *Queue) Purge(ctx context.Context, kind, field, value string) (int, error) {
	if _, err := q.CancelMatching(ctx, kind, field, value); err != nil {
		return 0, err
	}
	const batch = 1000
	deleted := 0
	for {
		res, err := q.c.JobDeleteMany(ctx, river.NewJobDeleteManyParams().Kinds(kind).
			Where(argIs, river.NamedArgs{"field": field, "value": value}).
			States(rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable,
				rivertype.JobStatePending, rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded).
			First(batch))
		if err != nil {
			return deleted, fmt.Errorf("jobs: delete %s jobs of %s %s: %w", kind, field, value, err)
		}
		deleted += len(res.Jobs)
		if len(res.Jobs) < batch {
			break
		}
	}
	left, err := q.Unfinished(ctx, kind, field, value)
	if err != nil {
		return deleted, err
	}
	if len(left) > 0 {
		return deleted, fmt.Errorf("jobs: purge %s jobs of %s %s: %d left: %w", kind, field, value, len(left), ErrRunning)
	}
	return deleted, nil
}

// SetProgress records how far job id got, as the JSON of progress, for
// Newest to show while it runs and after it ended; each call replaces
// the last. It is kept in the job's metadata, under "progress", which
// River merges into rather than replaces when it ends an attempt.
func (q *Queue) SetProgress(ctx context.Context, id int64, progress any) error {
	b, err := json.Marshal(progress)
	if err != nil {
		return fmt.Errorf("jobs: progress of %d: %w", id, err)
	}
	if q.db != nil {
		_, err = q.db.ExecContext(ctx, `UPDATE river_job SET metadata = jsonb_set(metadata, '$.progress', jsonb(?)) WHERE id = ?`, string(b), id)
	} else {
		_, err = q.pool.Exec(ctx, `UPDATE river_job SET metadata = jsonb_set(metadata, '{progress}', $1::jsonb) WHERE id = $2`, string(b), id)
	}
	if err != nil {
		return fmt.Errorf("jobs: progress of %d: %w", id, err)
	}
	return nil
}

// Info is a job as its row shows it.
type Info struct {
	ID    int64
	State State
	// Attempt counts the attempts begun so far; MaxAttempts is the last.
	Attempt, MaxAttempts int
	CreatedAt            time.Time
	// FinalizedAt is when the job ended (completed, cancelled or
	// discarded); zero before.
	FinalizedAt time.Time
	// Err is the last failed attempt's error; "" when none failed.
	Err string
	// Progress is what SetProgress recorded last; nil when nothing was.
	Progress json.RawMessage
}

// Newest returns the newest job of kind whose argument field is value, in
// any state. Returns an error matching ErrNotFound when there is none
// (River deletes finished jobs a day after they end).
func (q *Queue) Newest(ctx context.Context, kind, field, value string) (Info, error) {
	res, err := q.c.JobList(ctx, river.NewJobListParams().Kinds(kind).
		States(append(slices.Clone(unfinished), rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded)...).
		Where(argIs, river.NamedArgs{"field": field, "value": value}).
		OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(1))
	if err != nil {
		return Info{}, fmt.Errorf("jobs: newest %s job of %s %s: %w", kind, field, value, err)
	}
	if len(res.Jobs) == 0 {
		return Info{}, fmt.Errorf("jobs: no %s job of %s %s: %w", kind, field, value, ErrNotFound)
	}
	j := res.Jobs[0]
	info := Info{ID: j.ID, State: State(j.State), Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, CreatedAt: j.CreatedAt}
	if j.FinalizedAt != nil {
		info.FinalizedAt = *j.FinalizedAt
	}
	if n := len(j.Errors); n > 0 {
		info.Err = j.Errors[n-1].Error
	}
	var meta struct {
		Progress json.RawMessage `json:"progress"`
	}
	if err := json.Unmarshal(j.Metadata, &meta); err != nil {
		return Info{}, fmt.Errorf("jobs: metadata of job %d: %w", j.ID, err)
	}
	info.Progress = meta.Progress
	return info, nil
}

// State is where a job is.
type State string

// The states of a job (River's).
const (
	StateAvailable State = "available"
	StateScheduled State = "scheduled"
	StateRunning   State = "running"
	StateRetryable State = "retryable"
	StateCompleted State = "completed"
	StateCancelled State = "cancelled"
	StateDiscarded State = "discarded"
)

// JobState returns the job's state and its attempts so far. Returns an
// error matching ErrNotFound for an unknown job.
//
// It reads the two columns from River's table itself, as SetProgress
// writes it: Debounce reads a learning job's state at every turn, and
// River's JobGet decodes the whole row (the arguments, metadata, errors
// and five timestamps), which was two thirds of what the read cost.
func (q *Queue) JobState(ctx context.Context, id int64) (State, int, error) {
	var (
		st      string
		attempt int
		err     error
	)
	if q.db != nil {
		err = q.db.QueryRowContext(ctx, `SELECT state, attempt FROM river_job WHERE id = ?`, id).Scan(&st, &attempt)
	} else {
		err = q.pool.QueryRow(ctx, `SELECT state, attempt FROM river_job WHERE id = $1`, id).Scan(&st, &attempt)
	}
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows) {
		return "", 0, fmt.Errorf("jobs: job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", 0, fmt.Errorf("jobs: job %d: %w", id, err)
	}
	return State(st), attempt, nil
}

// ErrNotFound: no such job.
var ErrNotFound = errors.New("jobs: no such job")
