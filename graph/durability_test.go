package graph_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/pgtest"
)

// The crash tests run the graph below in a child process (this test binary
// started again), kill it with SIGKILL while the parallel step is half
// done, then continue the thread in this process.
//
//	START → a → b → fast ∥ slow → END
//
// Every node logs to a file when it finishes. In the child, slow waits
// until fast's writes are saved, tells the parent it is ready, and hangs.

const (
	envChild   = "TRELLIS_CRASH_CHILD"
	envBackend = "TRELLIS_CRASH_BACKEND"
	envTarget  = "TRELLIS_CRASH_TARGET"
	envDir     = "TRELLIS_CRASH_DIR"
)

func crashGraph(t testing.TB, cp graph.Checkpointer, dir string, hang bool) *graph.Compiled[State] {
	logDone := func(name string) {
		f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			panic(err)
		}
		fmt.Fprintln(f, name)
		f.Close()
	}
	node := func(name string) graph.NodeFunc[State] {
		return func(ctx context.Context, s State) (State, error) {
			if name == "slow" && hang {
				// fast has finished once its line is in the log; give the
				// engine a moment to save its writes, then hang.
				for !strings.Contains(readFile(filepath.Join(dir, "log")), "fast") {
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(200 * time.Millisecond)
				_ = os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600)
				select {}
			}
			logDone(name)
			return State{Items: []string{name}, Total: 1}, nil
		}
	}
	g := newGraph()
	for _, n := range []string{"a", "b", "fast", "slow"} {
		g.AddNode(n, node(n))
	}
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", "fast")
	g.AddEdge("b", "slow")
	g.AddEdge("fast", graph.END)
	g.AddEdge("slow", graph.END)
	c, err := g.Compile(graph.CompileOptions{Checkpointer: cp})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func openSaver(t testing.TB, backend, target string) (graph.Checkpointer, func()) {
	ctx := context.Background()
	switch backend {
	case "sqlite":
		s, err := sqlite.Open(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		return s, func() { s.Close() }
	default:
		s, err := postgres.Open(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		return s, s.Close
	}
}

// TestCrashChild is the child's body; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	if os.Getenv(envChild) == "" {
		t.Skip("runs only as the child of the crash tests")
	}
	cp, _ := openSaver(t, os.Getenv(envBackend), os.Getenv(envTarget))
	c := crashGraph(t, cp, os.Getenv(envDir), true)
	_, err := c.Invoke(context.Background(), &State{Answer: "input"}, graph.RunConfig{ThreadID: "crash"})
	t.Fatalf("the child's run should hang until killed, got %v", err)
}

func TestCrashMidRunContinues(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Run("sqlite", func(t *testing.T) {
		crashAndContinue(t, "sqlite", filepath.Join(t.TempDir(), "trellis.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		pool := pgtest.New(t)
		dsn := os.Getenv(pgtest.EnvDatabase)
		if dsn == "" {
			dsn = pgtest.DefaultDatabase
		}
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		crashAndContinue(t, "postgres", dsn+sep+"search_path="+pool.Config().ConnConfig.RuntimeParams["search_path"])
	})
}

func crashAndContinue(t *testing.T, backend, target string) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), envChild+"=1", envBackend+"="+backend, envTarget+"="+target, envDir+"="+dir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.After(60 * time.Second)
	for ready := false; !ready; {
		select {
		case <-exited:
			t.Fatalf("child exited before the crash point:\n%s", out.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("child never got ready:\n%s", out.String())
		case <-time.After(10 * time.Millisecond):
			_, err := os.Stat(filepath.Join(dir, "ready"))
			ready = err == nil
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	<-exited

	cp, closeSaver := openSaver(t, backend, target)
	defer closeSaver()
	c := crashGraph(t, cp, dir, false)
	snap, err := c.GetState(t.Context(), graph.Ref{ThreadID: "crash"})
	if err != nil {
		t.Fatalf("state after crash: %v\nchild:\n%s", err, out.String())
	}
	if !slices.Equal(snap.Next, []string{"fast", "slow"}) || !slices.Equal(snap.Values.Items, []string{"a", "b"}) {
		t.Fatalf("after crash: next %v items %v", snap.Next, snap.Values.Items)
	}
	final, err := c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(final.Items, []string{"a", "b", "fast", "slow"}) || final.Total != 4 || final.Answer != "input" {
		t.Fatalf("final %+v", final)
	}
	// Nothing that finished before the crash ran again.
	if log := readFile(filepath.Join(dir, "log")); log != "a\nb\nfast\nslow\n" {
		t.Fatalf("nodes ran:\n%s", log)
	}
}
