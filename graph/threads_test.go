package graph_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
)

// compatTurn runs one turn of compatGraph and returns its messages.
func compatTurn(t *testing.T, c *graph.Compiled[compatState], thread, text string) compatState {
	t.Helper()
	out, err := c.Invoke(t.Context(), &compatState{Last: text}, graph.RunConfig{ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// getCounter counts Get calls: loads of a thread.
type getCounter struct {
	graph.Checkpointer
	n atomic.Int32
}

func (g *getCounter) Get(ctx context.Context, ref graph.Ref) (*graph.Saved, error) {
	g.n.Add(1)
	return g.Checkpointer.Get(ctx, ref)
}

func wantTurns(t *testing.T, got compatState, texts ...string) {
	t.Helper()
	var want []compatMsg
	for _, s := range texts {
		want = append(want, compatMsg{"user", s}, compatMsg{"assistant", "re: " + s})
	}
	if !slices.Equal(got.Messages, want) || got.Turns != len(texts) {
		t.Fatalf("messages %v turns %d, want %v", got.Messages, got.Turns, want)
	}
}

// A run that takes its thread's state from the cache ends as one that
// loads it, and the checkpoints it writes read back the same.
func TestThreadCacheSameAsLoading(t *testing.T) {
	saver := memory.New()
	gets := &getCounter{Checkpointer: saver}
	hot := compatGraph(t, gets, graph.ThreadCacheLimits{})
	cold := compatGraph(t, saver, graph.ThreadCacheLimits{Threads: -1})
	var texts []string
	for i := range 150 { // 300 deltas: chains merge at both tiers
		texts = append(texts, fmt.Sprint("turn ", i))
		wantTurns(t, compatTurn(t, hot, "hot", texts[i]), texts...)
		wantTurns(t, compatTurn(t, cold, "cold", texts[i]), texts...)
	}
	if n := gets.n.Load(); n != 1 {
		t.Errorf("the cached thread was loaded %d times, want once (its first turn, finding nothing)", n)
	}
	a, err := hot.GetState(t.Context(), graph.Ref{ThreadID: "hot"})
	if err != nil {
		t.Fatal(err)
	}
	wantTurns(t, a.Values, texts...)
}

// Whatever wrote the thread's newest checkpoint other than the run that
// cached its state — another process, UpdateState, a fork — the next run
// loads the thread instead.
func TestThreadCacheMissesWhenOthersWrote(t *testing.T) {
	saver := memory.New()
	a := compatGraph(t, saver, graph.ThreadCacheLimits{})
	b := compatGraph(t, saver, graph.ThreadCacheLimits{}) // another process on the same store
	compatTurn(t, a, "t", "one")
	compatTurn(t, b, "t", "two")
	wantTurns(t, compatTurn(t, a, "t", "three"), "one", "two", "three")

	if _, err := a.UpdateState(t.Context(), graph.Ref{ThreadID: "t"}, "reply", graph.Command[compatState]{Update: compatState{Messages: []compatMsg{{"note", "x"}}}}); err != nil {
		t.Fatal(err)
	}
	out := compatTurn(t, a, "t", "four")
	if len(out.Messages) != 9 || out.Messages[6] != (compatMsg{"note", "x"}) {
		t.Fatalf("after UpdateState: %v", out.Messages)
	}

	hist, err := a.History(t.Context(), "t", graph.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := hist[len(hist)-1].Checkpoint.ID // the input of turn one
	if _, err := a.Invoke(t.Context(), &compatState{Last: "again"}, graph.RunConfig{ThreadID: "t", CheckpointID: first}); err != nil {
		t.Fatal(err)
	}
	wantTurns(t, compatTurn(t, a, "t", "five"), "again", "five")

	if err := b.DeleteThread(t.Context(), "t"); err != nil {
		t.Fatal(err)
	}
	wantTurns(t, compatTurn(t, a, "t", "anew"), "anew")
}

// The state Invoke returns and the values events carry are the caller's:
// appending to them does not reach the state the next run continues from.
func TestThreadCacheCallerOwnsItsState(t *testing.T) {
	c := compatGraph(t, memory.New(), graph.ThreadCacheLimits{})
	out := compatTurn(t, c, "t", "one")
	out.Messages = append(out.Messages, compatMsg{"mine", "x"})
	var last compatState
	for ev, err := range c.Stream(t.Context(), &compatState{Last: "two"}, graph.RunConfig{ThreadID: "t", Modes: graph.ModeValues}) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev.State
	}
	last.Messages = append(last.Messages, compatMsg{"mine", "y"})
	wantTurns(t, compatTurn(t, c, "t", "three"), "one", "two", "three")
	if out.Messages[2] != (compatMsg{"mine", "x"}) || last.Messages[4] != (compatMsg{"mine", "y"}) {
		t.Fatalf("the caller's appends changed: %v, %v", out.Messages, last.Messages)
	}
}

// A cache smaller than the threads' states, or fewer threads than run,
// evicts the oldest; runs on evicted threads load them and go on the
// same.
func TestThreadCacheEvicts(t *testing.T) {
	for _, limits := range []graph.ThreadCacheLimits{{Bytes: 2000}, {Threads: 3}} {
		t.Run(fmt.Sprintf("%+v", limits), func(t *testing.T) {
			gets := &getCounter{Checkpointer: memory.New()}
			c := compatGraph(t, gets, limits)
			var texts []string
			for i := range 10 {
				texts = append(texts, fmt.Sprint("turn ", i))
				for th := range 5 {
					wantTurns(t, compatTurn(t, c, fmt.Sprint("t", th), texts[i]), texts...)
				}
			}
			if n := gets.n.Load(); n <= 5 {
				t.Errorf("threads were loaded %d times: nothing was evicted", n)
			}
		})
	}
}

// Runs on many threads at once, and on one thread at once, share the cache
// safely; the race detector watches.
func TestThreadCacheConcurrent(t *testing.T) {
	c := compatGraph(t, memory.New(), graph.ThreadCacheLimits{})
	var wg sync.WaitGroup
	for th := range 8 {
		wg.Go(func() {
			for i := range 20 {
				if _, err := c.Invoke(t.Context(), &compatState{Last: fmt.Sprint(i)}, graph.RunConfig{ThreadID: fmt.Sprint("t", th%4)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for th := range 4 {
		s, err := c.GetState(t.Context(), graph.Ref{ThreadID: fmt.Sprint("t", th)})
		if err != nil {
			t.Fatal(err)
		}
		out := compatTurn(t, c, fmt.Sprint("t", th), "last")
		if len(out.Messages) != len(s.Values.Messages)+2 {
			t.Fatalf("thread t%d: %d messages after a turn on %d", th, len(out.Messages), len(s.Values.Messages))
		}
	}
}

// In every durability mode, the state a run leaves in the cache is the
// state its checkpoints store: a graph that loads the thread reads what
// the cached turns wrote, merged delta chains included.
func TestThreadCacheInEveryDurability(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			saver := memory.New()
			gets := &getCounter{Checkpointer: saver}
			hot := compatGraph(t, gets, graph.ThreadCacheLimits{})
			cold := compatGraph(t, saver, graph.ThreadCacheLimits{Threads: -1})
			var texts []string
			for i := range 60 {
				texts = append(texts, fmt.Sprint("turn ", i))
				out, err := hot.Invoke(t.Context(), &compatState{Last: texts[i]}, graph.RunConfig{ThreadID: "t", Durability: mode})
				if err != nil {
					t.Fatal(err)
				}
				wantTurns(t, out, texts...)
				if i%7 == 0 {
					s, err := cold.GetState(t.Context(), graph.Ref{ThreadID: "t"})
					if err != nil {
						t.Fatal(err)
					}
					wantTurns(t, s.Values, texts...)
				}
			}
			if n := gets.n.Load(); n != 1 {
				t.Errorf("the cached thread was loaded %d times, want once", n)
			}
		})
	}
}
