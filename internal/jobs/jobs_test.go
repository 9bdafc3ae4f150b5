package jobs_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/internal/pgtest"
)

type echoArgs struct {
	N int `json:"n"`
}

func (echoArgs) Kind() string { return "test_echo" }

type blockArgs struct {
	Marker string `json:"marker"`
}

func (blockArgs) Kind() string { return "test_block" }

// backend opens a queue of its database for a test; each call on one
// test opens the same database (as a restarted process would).
type backend struct {
	name string
	open func(t *testing.T, ws *jobs.Workers, cfg jobs.Config) *jobs.Queue
	// child is the environment a child process needs to open the same
	// database.
	child func() string
}

func backends(t *testing.T) []backend {
	var out []backend
	path := filepath.Join(t.TempDir(), "jobs.db")
	out = append(out, backend{
		name: "sqlite",
		open: func(t *testing.T, ws *jobs.Workers, cfg jobs.Config) *jobs.Queue {
			q, err := jobs.SQLite(t.Context(), path, ws, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { q.Close() })
			return q
		},
		child: func() string { return "sqlite\x1f" + path },
	})
	var pool *pgxpool.Pool
	out = append(out, backend{
		name: "postgres",
		open: func(t *testing.T, ws *jobs.Workers, cfg jobs.Config) *jobs.Queue {
			if pool == nil {
				pool = pgtest.New(t)
			}
			q, err := jobs.Postgres(t.Context(), pool, ws, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
		child: func() string {
			c := pool.Config().ConnConfig
			return "postgres\x1f" + pool.Config().ConnString() + "\x1f" + c.RuntimeParams["search_path"]
		},
	})
	return out
}

func start(t *testing.T, q *jobs.Queue) {
	t.Helper()
	if err := q.Start(context.WithoutCancel(t.Context())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := q.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
}

// waitState polls the job's state until it is want, for at most d.
func waitState(t *testing.T, q *jobs.Queue, id int64, want jobs.State, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st, attempt, err := q.JobState(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st == want {
			return attempt
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d is %s after %v, want %s", id, st, d, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fast() jobs.Config { return jobs.Config{PollInterval: 50 * time.Millisecond, Concurrency: 4} }

func TestWorkRetryPermanent(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			var mu sync.Mutex
			attempts := map[int][]time.Time{}
			ws := jobs.NewWorkers()
			jobs.Handle(ws, func(ctx context.Context, j jobs.Job[echoArgs]) error {
				mu.Lock()
				attempts[j.Args.N] = append(attempts[j.Args.N], time.Now())
				mu.Unlock()
				switch {
				case j.Args.N == 2 && j.Attempt < 3: // fails twice, then succeeds
					return fmt.Errorf("attempt %d of job 2 fails", j.Attempt)
				case j.Args.N == 3:
					return jobs.Permanent(errors.New("no retry can fix this"))
				}
				return nil
			}, jobs.HandleOptions{Backoff: func(int) time.Duration { return 100 * time.Millisecond }})
			q := b.open(t, ws, fast())
			var ids []int64
			for n := range 4 {
				id, err := q.Enqueue(t.Context(), echoArgs{N: n}, jobs.EnqueueOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			start(t, q)
			for _, n := range []int{0, 1, 2} {
				waitState(t, q, ids[n], jobs.StateCompleted, 30*time.Second)
			}
			if got := waitState(t, q, ids[3], jobs.StateCancelled, 30*time.Second); got != 1 {
				t.Errorf("a permanent error was tried %d times", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(attempts[2]) != 3 {
				t.Fatalf("job 2 ran %d times, want 3", len(attempts[2]))
			}
			for i := 1; i < 3; i++ {
				if gap := attempts[2][i].Sub(attempts[2][i-1]); gap < 100*time.Millisecond {
					t.Errorf("retry %d came %v after the failure, before its backoff", i, gap)
				}
			}
		})
	}
}

func TestUniqueAndCancel(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ws := jobs.NewWorkers()
			jobs.Handle(ws, func(ctx context.Context, j jobs.Job[echoArgs]) error { return nil }, jobs.HandleOptions{})
			q := b.open(t, ws, fast())
			a, err := q.Enqueue(t.Context(), echoArgs{N: 7}, jobs.EnqueueOptions{Unique: true})
			if err != nil {
				t.Fatal(err)
			}
			again, err := q.Enqueue(t.Context(), echoArgs{N: 7}, jobs.EnqueueOptions{Unique: true})
			if err != nil || again != a {
				t.Fatalf("unique job enqueued twice: %d, %d, %v", a, again, err)
			}
			later, err := q.Enqueue(t.Context(), echoArgs{N: 8}, jobs.EnqueueOptions{Delay: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Cancel(t.Context(), later); err != nil {
				t.Fatal(err)
			}
			if st, _, _ := q.JobState(t.Context(), later); st != jobs.StateCancelled {
				t.Fatalf("cancelled job is %s", st)
			}
			keep, err := q.Enqueue(t.Context(), echoArgs{N: 9}, jobs.EnqueueOptions{Delay: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			drop, err := q.Enqueue(t.Context(), echoArgs{N: 10}, jobs.EnqueueOptions{Delay: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if n, err := q.CancelMatching(t.Context(), echoArgs{}.Kind(), "n", "10"); err != nil || n != 1 {
				t.Fatalf("CancelMatching = %d, %v; want 1", n, err)
			}
			for id, want := range map[int64]jobs.State{keep: jobs.StateScheduled, drop: jobs.StateCancelled} {
				if st, _, _ := q.JobState(t.Context(), id); st != want {
					t.Errorf("job %d is %s, want %s", id, st, want)
				}
			}
			if _, _, err := q.JobState(t.Context(), 987654); !errors.Is(err, jobs.ErrNotFound) {
				t.Fatalf("unknown job: %v", err)
			}
		})
	}
}

// Stop lets a running job finish before it returns.
func TestStopWaitsForRunningJob(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			var finished atomic.Bool
			ws := jobs.NewWorkers()
			jobs.Handle(ws, func(ctx context.Context, j jobs.Job[echoArgs]) error {
				close(started)
				<-release
				finished.Store(true)
				return nil
			}, jobs.HandleOptions{})
			q := b.open(t, ws, fast())
			id, err := q.Enqueue(t.Context(), echoArgs{N: 1}, jobs.EnqueueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Start(context.WithoutCancel(t.Context())); err != nil {
				t.Fatal(err)
			}
			<-started
			stopped := make(chan error, 1)
			go func() { stopped <- q.Stop(context.Background()) }()
			select {
			case err := <-stopped:
				t.Fatalf("Stop returned (%v) while a job ran", err)
			case <-time.After(300 * time.Millisecond):
			}
			close(release)
			if err := <-stopped; err != nil {
				t.Fatal(err)
			}
			if !finished.Load() {
				t.Fatal("Stop returned before the job finished")
			}
			if st, _, err := q.JobState(t.Context(), id); err != nil || st != jobs.StateCompleted {
				t.Fatalf("job after Stop: %s, %v", st, err)
			}
		})
	}
}

const childEnv = "TRELLIS_JOBS_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		runChild(spec)
		return
	}
	os.Exit(m.Run())
}

// runChild is a process that takes a job that blocks and is killed while
// it runs it.
func runChild(spec string) {
	parts := strings.Split(spec, "\x1f")
	ctx := context.Background()
	ws := jobs.NewWorkers()
	jobs.Handle(ws, func(ctx context.Context, j jobs.Job[blockArgs]) error {
		os.WriteFile(j.Args.Marker, []byte("running"), 0o644)
		select {} // until the parent kills this process
	}, jobs.HandleOptions{})
	cfg := jobs.Config{PollInterval: 50 * time.Millisecond, JobTimeout: time.Minute}
	var q *jobs.Queue
	var err error
	switch parts[0] {
	case "sqlite":
		q, err = jobs.SQLite(ctx, parts[1], ws, cfg)
	case "postgres":
		pcfg, perr := pgxpool.ParseConfig(parts[1])
		if perr != nil {
			panic(perr)
		}
		pcfg.ConnConfig.RuntimeParams["search_path"] = parts[2]
		pool, perr := pgxpool.NewWithConfig(ctx, pcfg)
		if perr != nil {
			panic(perr)
		}
		q, err = jobs.Postgres(ctx, pool, ws, cfg)
	}
	if err != nil {
		panic(err)
	}
	if err := q.Start(ctx); err != nil {
		panic(err)
	}
	select {}
}

// A job whose process is killed while it runs it is run again by the next
// process, from its next attempt.
func TestCrashedJobResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the dead process's lease to run out")
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "running")
			// Enqueue through a queue of this process, not started, so the
			// child is the one that takes the job.
			idle := jobs.NewWorkers()
			jobs.Handle(idle, func(context.Context, jobs.Job[blockArgs]) error { return nil }, jobs.HandleOptions{})
			setup := b.open(t, idle, fast())
			id, err := setup.Enqueue(t.Context(), blockArgs{Marker: marker}, jobs.EnqueueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+b.child())
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(marker); err == nil {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the child never ran the job")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if st, _, _ := setup.JobState(t.Context(), id); st != jobs.StateRunning {
				t.Fatalf("after the kill the job is %s, want running (abandoned)", st)
			}

			done := make(chan int, 1)
			ws := jobs.NewWorkers()
			jobs.Handle(ws, func(ctx context.Context, j jobs.Job[blockArgs]) error {
				done <- j.Attempt
				return nil
			}, jobs.HandleOptions{Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
			q := b.open(t, ws, jobs.Config{PollInterval: 50 * time.Millisecond, JobTimeout: time.Second, RescueAfter: 2 * time.Second})
			start(t, q)
			select {
			case attempt := <-done:
				if attempt != 2 {
					t.Errorf("resumed as attempt %d, want 2", attempt)
				}
			case <-time.After(90 * time.Second):
				t.Fatal("the abandoned job was not resumed")
			}
			waitState(t, q, id, jobs.StateCompleted, 10*time.Second)
		})
	}
}

type tickArgs struct{}

func (tickArgs) Kind() string { return "test_tick" }

// A periodic job is enqueued at start (RunOnStart) and again each period.
func TestPeriodic(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ticks := make(chan struct{}, 16)
			ws := jobs.NewWorkers()
			jobs.Handle(ws, func(context.Context, jobs.Job[tickArgs]) error {
				ticks <- struct{}{}
				return nil
			}, jobs.HandleOptions{})
			cfg := fast()
			cfg.Periodic = []jobs.Periodic{{Every: 300 * time.Millisecond, Args: tickArgs{}, RunOnStart: true}}
			start(t, b.open(t, ws, cfg))
			for i := range 2 {
				select {
				case <-ticks:
				case <-time.After(30 * time.Second):
					t.Fatalf("periodic job ran %d times in 30 s, want 2", i)
				}
			}
		})
	}
}

// Purge deletes every job of an argument value, finished or waiting,
// and keeps the others; Newest finds the newest of a value, in any state.
func TestPurgeAndNewest(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ws := jobs.NewWorkers()
			jobs.Handle(ws, func(ctx context.Context, j jobs.Job[echoArgs]) error { return nil }, jobs.HandleOptions{})
			q := b.open(t, ws, fast())
			start(t, q)
			ctx := t.Context()
			done, err := q.Enqueue(ctx, echoArgs{N: 5}, jobs.EnqueueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			waitState(t, q, done, jobs.StateCompleted, 10*time.Second)
			waiting, err := q.Enqueue(ctx, echoArgs{N: 5}, jobs.EnqueueOptions{Delay: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			kept, err := q.Enqueue(ctx, echoArgs{N: 6}, jobs.EnqueueOptions{Delay: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			info, err := q.Newest(ctx, echoArgs{}.Kind(), "n", "5")
			if err != nil || info.ID != waiting || info.State != jobs.StateScheduled {
				t.Fatalf("Newest = %+v, %v; want job %d scheduled", info, err, waiting)
			}
			if n, err := q.Purge(ctx, echoArgs{}.Kind(), "n", "5"); err != nil || n != 2 {
				t.Fatalf("Purge = %d, %v; want 2", n, err)
			}
			for _, id := range []int64{done, waiting} {
				if _, _, err := q.JobState(ctx, id); !errors.Is(err, jobs.ErrNotFound) {
					t.Errorf("job %d after Purge: %v", id, err)
				}
			}
			if st, _, _ := q.JobState(ctx, kept); st != jobs.StateScheduled {
				t.Errorf("another value's job is %s after Purge", st)
			}
			if _, err := q.Newest(ctx, echoArgs{}.Kind(), "n", "5"); !errors.Is(err, jobs.ErrNotFound) {
				t.Errorf("Newest after Purge: %v", err)
			}
		})
	}
}

// debounceArgs are a debounced job's: After names the job it follows.
type debounceArgs struct {
	Key   string `json:"key"`
	After int64  `json:"after,omitempty"`
}

func (debounceArgs) Kind() string { return "test_debounce" }

// Debounce stores one job for the calls made while it waits; Now makes
// the waiting one due at once; while it runs, calls store one job to
// follow it, which waits (Snooze) until the first has ended and then
// runs once.
// A job Debounce stored that no longer waits when the next call comes
// (cancelled here, as an erasure does, or completed) stands for nothing:
// the call stores a new one, so its work is done.
func TestDebounceJobGone(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ws := jobs.NewWorkers()
			jobs.Handle(ws, func(context.Context, jobs.Job[debounceArgs]) error { return nil }, jobs.HandleOptions{})
			q := b.open(t, ws, fast())
			ctx := t.Context()
			opts := jobs.DebounceOptions{Delay: time.Hour}
			first, err := q.Debounce(ctx, debounceArgs{Key: "gone"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if again, err := q.Debounce(ctx, debounceArgs{Key: "gone"}, opts); err != nil || again != first {
				t.Fatalf("a second call while the job waits: %d, %v; want %d", again, err, first)
			}
			if err := q.Cancel(ctx, first); err != nil {
				t.Fatal(err)
			}
			next, err := q.Debounce(ctx, debounceArgs{Key: "gone"}, opts)
			if err != nil || next == first {
				t.Fatalf("a call after the job was cancelled: %d, %v; want a new job", next, err)
			}
			waitState(t, q, next, jobs.StateScheduled, time.Second)
			if again, err := q.Debounce(ctx, debounceArgs{Key: "gone"}, opts); err != nil || again != next {
				t.Fatalf("a call while the new job waits: %d, %v; want %d", again, err, next)
			}
		})
	}
}

func TestDebounce(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			release := make(chan struct{})
			runs := make(chan debounceArgs, 10)
			var q *jobs.Queue
			ws := jobs.NewWorkers()
			jobs.Handle(ws, func(ctx context.Context, j jobs.Job[debounceArgs]) error {
				if j.Args.After != 0 {
					if running, err := q.Running(ctx, j.Args.After); err != nil || running {
						return cmp.Or(err, jobs.Snooze(100*time.Millisecond))
					}
				}
				runs <- j.Args
				if j.Args.After == 0 {
					<-release
				}
				return nil
			}, jobs.HandleOptions{})
			q = b.open(t, ws, fast())
			ctx := t.Context()
			opts := jobs.DebounceOptions{Delay: time.Hour,
				Follow: func(running int64) jobs.Args { return debounceArgs{Key: "k", After: running} }}
			first, err := q.Debounce(ctx, debounceArgs{Key: "k"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if again, err := q.Debounce(ctx, debounceArgs{Key: "k"}, opts); err != nil || again != first {
				t.Fatalf("a second call while the job waits: %d, %v; want %d", again, err, first)
			}
			waitState(t, q, first, jobs.StateScheduled, time.Second)
			now := opts
			now.Now = true
			if again, err := q.Debounce(ctx, debounceArgs{Key: "k"}, now); err != nil || again != first {
				t.Fatalf("a call with Now: %d, %v; want %d", again, err, first)
			}
			start(t, q)
			waitState(t, q, first, jobs.StateRunning, 10*time.Second)
			follow, err := q.Debounce(ctx, debounceArgs{Key: "k"}, opts)
			if err != nil || follow == first {
				t.Fatalf("a call while the job runs: %d, %v", follow, err)
			}
			if again, err := q.Debounce(ctx, debounceArgs{Key: "k"}, opts); err != nil || again != follow {
				t.Fatalf("another call while the job runs: %d, %v; want %d", again, err, follow)
			}
			if got := <-runs; got != (debounceArgs{Key: "k"}) {
				t.Fatalf("first run: %+v", got)
			}
			if now, err := q.Debounce(ctx, debounceArgs{Key: "k"}, jobs.DebounceOptions{Now: true,
				Follow: opts.Follow}); err != nil || now != follow {
				t.Fatalf("a call with Now while the job runs: %d, %v; want %d", now, err, follow)
			}
			select {
			case got := <-runs:
				t.Fatalf("the job to follow ran while the first ran: %+v", got)
			case <-time.After(500 * time.Millisecond):
			}
			close(release)
			if got := <-runs; got != (debounceArgs{Key: "k", After: first}) {
				t.Fatalf("second run: %+v", got)
			}
			waitState(t, q, follow, jobs.StateCompleted, 10*time.Second)
		})
	}
}
