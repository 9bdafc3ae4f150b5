package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// fillCheckpoints writes threads threads of steps checkpoints each, shaped
// as the engine writes them: a messages field growing by deltas (every
// tenth merging the chain's last ones, as the engine does) and a field
// replaced each step.
func fillCheckpoints(t testing.TB, s graph.Checkpointer, threads, steps int) {
	t.Helper()
	fillRange(t, s, threads, 0, steps)
}

// fillRange writes steps from+1 to from+n of each thread.
func fillRange(t testing.TB, s graph.Checkpointer, threads, from, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, threads)
	sem := make(chan struct{}, 8)
	for th := range threads {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			thread := fmt.Sprintf("conv-%04d", th)
			for i := from + 1; i <= from+n; i++ {
				id, v := fmt.Sprintf("%06d", i), fmt.Sprint(i)
				msgs := graph.Blob{Field: "Messages", Version: v, Delta: i > 1, Base: fmt.Sprint(i - 1), Data: []byte(`[{"role":"user","content":"turn ` + v + `"}]`)}
				switch {
				case i == 1:
					msgs.Base = ""
				case i%10 == 0:
					msgs.Base = fmt.Sprint(i - 10)
					msgs.Data = bytes.Repeat(msgs.Data, 10)
				}
				var parent string
				if i > 1 {
					parent = fmt.Sprintf("%06d", i-1)
				}
				cp := graph.Checkpoint{ThreadID: thread, ID: id, ParentID: parent, Step: i, Source: graph.SourceLoop,
					CreatedAt: time.Now(), Versions: map[string]string{"Messages": v, "Answer": v}}
				if err := s.Put(context.Background(), cp, []graph.Blob{msgs, {Field: "Answer", Version: v, Data: []byte(`"answer ` + v + `"`)}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// heads loads the newest checkpoint of every thread.
func heads(t *testing.T, s graph.Checkpointer, threads int) map[string]*graph.Saved {
	t.Helper()
	out := make(map[string]*graph.Saved, threads)
	for th := range threads {
		thread := fmt.Sprintf("conv-%04d", th)
		saved, err := s.Get(t.Context(), graph.Ref{ThreadID: thread})
		if err != nil {
			t.Fatalf("thread %s does not load: %v", thread, err)
		}
		out[thread] = saved
	}
	return out
}

// sameHeads fails unless every thread's newest checkpoint loads back with
// the same blobs, byte for byte.
func sameHeads(t *testing.T, before, after map[string]*graph.Saved) {
	t.Helper()
	str := func(s *graph.Saved) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %v\n", s.Checkpoint.ID, s.Checkpoint.Versions)
		blobs := map[string]string{}
		for _, bl := range s.Blobs {
			blobs[bl.Field+"@"+bl.Version] = fmt.Sprintf("%t %s %q", bl.Delta, bl.Base, bl.Data)
		}
		fmt.Fprint(&b, blobs)
		return b.String()
	}
	for thread, b := range before {
		if got, want := str(after[thread]), str(b); got != want {
			t.Errorf("thread %s head:\n got %s\nwant %s", thread, got, want)
		}
	}
}

func TestPruneCommand(t *testing.T) {
	t.Parallel()
	const threads, steps = 5, 30
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var s interface {
				graph.Checkpointer
				checkpointSizer
			}
			args, env := []string{}, map[string]string{}
			if backend == "sqlite" {
				dir := t.TempDir()
				ss, err := sqlite.Open(t.Context(), filepath.Join(dir, "checkpoints.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ss.Close() })
				s, args = ss, []string{"-data-dir", dir}
			} else {
				dsn := pgDSN(t)
				ps, err := postgres.Open(t.Context(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(ps.Close)
				s, env["DATABASE_URL"] = ps, dsn
			}
			fillCheckpoints(t, s, threads, steps)
			before := heads(t, s, threads)
			sizeBefore, err := s.Bytes(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			prune := func(extra ...string) string {
				t.Helper()
				var out, errOut bytes.Buffer
				code := run(t.Context(), append(append([]string{"prune", "-keep", "3"}, args...), extra...),
					stdio{out: &out, err: &errOut, getenv: func(k string) string { return env[k] }})
				if code != 0 {
					t.Fatalf("prune %q: exit %d: %s", extra, code, errOut.String())
				}
				return out.String()
			}
			dry := prune("-dry-run")
			sizeDry, err := s.Bytes(t.Context())
			if err != nil || sizeDry != sizeBefore {
				t.Errorf("dry run: %d bytes stored, was %d (%v)", sizeDry, sizeBefore, err)
			}
			if want := fmt.Sprintf("would remove %d checkpoints of %d threads", threads*(steps-3), threads); !strings.HasPrefix(dry, want) {
				t.Errorf("dry run said %q, want %q…", dry, want)
			}
			done := prune()
			if got, want := done, "removed"+strings.TrimPrefix(dry, "would remove"); got != want {
				t.Errorf("prune said %q, want %q", got, want)
			}
			sizeAfter, err := s.Bytes(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var freed int64
			fmt.Sscanf(dry[strings.LastIndex(dry, ", ")+2:], "%d", &freed)
			if sizeBefore-sizeAfter != freed {
				t.Errorf("stored %d bytes, then %d: freed %d, the dry run said %d", sizeBefore, sizeAfter, sizeBefore-sizeAfter, freed)
			}
			sameHeads(t, before, heads(t, s, threads))
			cps, err := s.List(t.Context(), graph.ListOptions{ThreadID: "conv-0000"})
			if err != nil || len(cps) != 3 {
				t.Errorf("kept %d checkpoints of a thread, want 3 (%v)", len(cps), err)
			}
		})
	}
}

// TestPruneKilledHalfway kills trellis prune in the middle of a large
// database: every thread still loads with its state intact, and the next
// prune finishes the work. On both backends.
func TestPruneKilledHalfway(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a large database")
	}
	const threads, steps = 300, 40
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var s graph.Checkpointer
			var count func() int
			var args []string
			countRow := func(row interface{ Scan(...any) error }) int {
				var n int
				if err := row.Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			if backend == "sqlite" {
				dir := t.TempDir()
				path := filepath.Join(dir, "checkpoints.db")
				ss, err := sqlite.Open(t.Context(), path)
				if err != nil {
					t.Fatal(err)
				}
				defer ss.Close()
				db, err := sqlopen.SQLite(path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				s, args = ss, []string{"--data-dir", dir}
				count = func() int { return countRow(db.QueryRowContext(t.Context(), `SELECT count(*) FROM checkpoints`)) }
			} else {
				dsn := pgDSN(t)
				ps, err := postgres.Open(t.Context(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer ps.Close()
				conn, err := pgx.Connect(t.Context(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(context.Background())
				s, args = ps, []string{"--database-url", dsn}
				count = func() int { return countRow(conn.QueryRow(t.Context(), `SELECT count(*) FROM checkpoints`)) }
			}
			fillCheckpoints(t, s, threads, steps)
			before := heads(t, s, threads)

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childArgs+"=prune --keep 2 "+strings.Join(args, " "))
			var logs bytes.Buffer
			cmd.Stderr = &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			killed := false
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if n := count(); n < threads*steps {
					killed = n > threads*2 && cmd.Process.Signal(syscall.SIGKILL) == nil
					break
				}
			}
			werr := cmd.Wait()
			n := count()
			if !killed || n == threads*2 {
				t.Fatalf("prune was not killed halfway (%d checkpoints left, wait %v):\n%s", n, werr, logs.String())
			}
			t.Logf("killed with %d of %d checkpoints left", n, threads*steps)
			sameHeads(t, before, heads(t, s, threads))

			var out bytes.Buffer
			if code := run(t.Context(), append([]string{"prune", "-keep", "2"}, args...), stdio{out: &out, err: &out, getenv: func(string) string { return "" }}); code != 0 {
				t.Fatalf("second prune: %s", out.String())
			}
			if n := count(); n != threads*2 {
				t.Errorf("%d checkpoints after the second prune, want %d", n, threads*2)
			}
			sameHeads(t, before, heads(t, s, threads))
		})
	}
}

// BenchmarkPruneGrowth measures what pruning saves: one conversation of
// 10,000 checkpoints and 1,000 conversations of 10, shaped as the engine
// writes them, pruned to 50 per branch (every 1,000 checkpoints on the long
// one, at the end on the many) or not at all. Run with -benchtime=1x; it
// reports stored bytes, the database file's size and the cost per
// checkpoint write.
func BenchmarkPruneGrowth(b *testing.B) {
	for _, shape := range []struct {
		name           string
		threads, steps int
	}{{"1x10000", 1, 10000}, {"1000x10", 1000, 10}} {
		for _, keep := range []int{0, 50} {
			b.Run(fmt.Sprintf("%s/keep=%d", shape.name, keep), func(b *testing.B) {
				for b.Loop() {
					path := filepath.Join(b.TempDir(), "checkpoints.db")
					s, err := sqlite.Open(b.Context(), path)
					if err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					chunk := min(shape.steps, 1000)
					for done := 0; done < shape.steps; done += chunk {
						fillRange(b, s, shape.threads, done, chunk)
						if keep > 0 {
							if _, err := s.Prune(b.Context(), graph.PruneOptions{Keep: keep}); err != nil {
								b.Fatal(err)
							}
						}
					}
					elapsed := time.Since(start)
					n, err := s.Bytes(b.Context())
					if err != nil {
						b.Fatal(err)
					}
					if err := s.TruncateWAL(b.Context()); err != nil {
						b.Fatal(err)
					}
					fi, err := os.Stat(path)
					if err != nil {
						b.Fatal(err)
					}
					s.Close()
					b.ReportMetric(float64(n), "stored-bytes")
					b.ReportMetric(float64(fi.Size()), "file-bytes")
					b.ReportMetric(float64(elapsed.Microseconds())/float64(shape.threads*shape.steps), "µs/checkpoint")
				}
			})
		}
	}
}
