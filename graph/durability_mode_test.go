package graph_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
)

// modeGraph is START → a → b → c → END, each appending its name and
// adding 1; b waits on gate when it is not nil, and interrupts on its
// first run when ask is set.
func modeGraph(t *testing.T, saver graph.Checkpointer, d graph.Durability, gate chan struct{}, ask bool) *graph.Compiled[State] {
	t.Helper()
	g := newGraph()
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(ctx context.Context, s State) (State, error) {
			if n == "b" && gate != nil {
				gate <- struct{}{}
				<-gate
			}
			if n == "b" && ask {
				if _, err := graph.Interrupt[string](ctx, "ok?"); err != nil {
					return State{}, err
				}
			}
			return State{Items: []string{n}, Total: 1}, nil
		})
	}
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", "c")
	g.AddEdge("c", graph.END)
	return compile(t, g, graph.CompileOptions{Checkpointer: saver, Durability: d})
}

func sources(t *testing.T, saver graph.Checkpointer, thread string) []graph.Source {
	t.Helper()
	cps, err := saver.List(t.Context(), graph.ListOptions{ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	var out []graph.Source
	for _, cp := range slices.Backward(cps) {
		out = append(out, cp.Source)
	}
	return out
}

func TestDurabilityExitWritesInputAndLast(t *testing.T) {
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(d.String(), func(t *testing.T) {
			saver := &countingSaver{Checkpointer: memory.New()}
			c := modeGraph(t, saver, d, nil, false)
			for turn := 1; turn <= 2; turn++ {
				out := must[State](t)(c.Invoke(t.Context(), &State{Items: []string{"in"}}, graph.RunConfig{ThreadID: "t"}))
				want := slices.Repeat([]string{"in", "a", "b", "c"}, turn)
				if !slices.Equal(out.Items, want) || out.Total != 3*turn {
					t.Fatalf("turn %d: %+v", turn, out)
				}
				// What a later run reads is what the run ended with, deltas
				// and all.
				snap := must[graph.Snapshot[State]](t)(c.GetState(t.Context(), graph.Ref{ThreadID: "t"}))
				if !slices.Equal(snap.Values.Items, want) || snap.Values.Total != 3*turn || len(snap.Next) != 0 {
					t.Fatalf("turn %d: stored %+v next %v", turn, snap.Values, snap.Next)
				}
			}
			puts := map[graph.Durability]int{graph.DurabilitySync: 8, graph.DurabilityAsync: 8, graph.DurabilityExit: 4}[d]
			if len(saver.bytes) != puts {
				t.Fatalf("%d checkpoints written, want %d", len(saver.bytes), puts)
			}
		})
	}
}

func TestDurabilityRunConfigOverridesGraph(t *testing.T) {
	saver := &countingSaver{Checkpointer: memory.New()}
	c := modeGraph(t, saver, graph.DurabilityExit, nil, false)
	must[State](t)(c.Invoke(t.Context(), &State{}, graph.RunConfig{ThreadID: "t", Durability: graph.DurabilitySync}))
	if len(saver.bytes) != 4 {
		t.Fatalf("%d checkpoints written, want 4", len(saver.bytes))
	}
}

// While a run in exit mode is in the middle, only its input is saved:
// a crash then continues from the input. Sync mode has saved each step.
func TestDurabilityExitMidRunLeavesTheInput(t *testing.T) {
	for _, tc := range []struct {
		d    graph.Durability
		want []graph.Source
	}{
		{graph.DurabilitySync, []graph.Source{graph.SourceInput, graph.SourceLoop}},
		{graph.DurabilityExit, []graph.Source{graph.SourceInput}},
	} {
		t.Run(tc.d.String(), func(t *testing.T) {
			saver := memory.New()
			gate := make(chan struct{})
			c := modeGraph(t, saver, tc.d, gate, false)
			done := make(chan error, 1)
			go func() {
				_, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{ThreadID: "t"})
				done <- err
			}()
			<-gate // b is running
			if got := sources(t, saver, "t"); !slices.Equal(got, tc.want) {
				t.Errorf("saved mid-run: %v, want %v", got, tc.want)
			}
			// Continuing from what is saved, as after a crash, gives the
			// same result.
			crashed := memory.New()
			cps, _ := saver.List(t.Context(), graph.ListOptions{ThreadID: "t"})
			for _, cp := range slices.Backward(cps) {
				saved, err := saver.Get(t.Context(), graph.Ref{ThreadID: "t", ID: cp.ID})
				if err != nil {
					t.Fatal(err)
				}
				if err := crashed.Put(t.Context(), saved.Checkpoint, saved.Blobs); err != nil {
					t.Fatal(err)
				}
			}
			gate <- struct{}{}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			out := must[State](t)(modeGraph(t, crashed, tc.d, nil, false).Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "t"}))
			if !slices.Equal(out.Items, []string{"a", "b", "c"}) || out.Total != 3 {
				t.Fatalf("continued after the crash: %+v", out)
			}
		})
	}
}

// A run in exit mode that pauses or fails saves where it stopped, so it
// resumes or continues as in sync mode.
func TestDurabilityExitSavesOnInterruptAndFailure(t *testing.T) {
	saver := memory.New()
	c := modeGraph(t, saver, graph.DurabilityExit, nil, true)
	_, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{ThreadID: "t"})
	var ie *graph.InterruptError
	if !errors.As(err, &ie) || len(ie.Interrupts) != 1 {
		t.Fatalf("want one interrupt, got %v", err)
	}
	if got := sources(t, saver, "t"); !slices.Equal(got, []graph.Source{graph.SourceInput, graph.SourceLoop}) {
		t.Fatalf("saved at the interrupt: %v", got)
	}
	out := must[State](t)(c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "t", Resume: "yes"}))
	if !slices.Equal(out.Items, []string{"a", "b", "c"}) {
		t.Fatalf("resumed: %+v", out)
	}

	ctx, cancel := context.WithCancel(t.Context())
	gate := make(chan struct{})
	saver = memory.New()
	c = modeGraph(t, saver, graph.DurabilityExit, gate, false)
	done := make(chan error, 1)
	go func() {
		_, err := c.Invoke(ctx, &State{}, graph.RunConfig{ThreadID: "t"})
		done <- err
	}()
	<-gate
	cancel()
	gate <- struct{}{}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("want the cancel, got %v", err)
	}
	snap := must[graph.Snapshot[State]](t)(c.GetState(t.Context(), graph.Ref{ThreadID: "t"}))
	if !slices.Equal(snap.Values.Items, []string{"a", "b"}) || !slices.Equal(snap.Next, []string{"c"}) {
		t.Fatalf("saved at the cancel: %+v next %v", snap.Values, snap.Next)
	}
}

// NewThread skips looking for a checkpoint the caller knows is not there.
func TestNewThreadStartsFromTheInput(t *testing.T) {
	saver := memory.New()
	c := modeGraph(t, saver, graph.DurabilitySync, nil, false)
	out := must[State](t)(c.Invoke(t.Context(), &State{Items: []string{"in"}}, graph.RunConfig{ThreadID: "t", NewThread: true}))
	if !slices.Equal(out.Items, []string{"in", "a", "b", "c"}) {
		t.Fatalf("%+v", out)
	}
	out = must[State](t)(c.Invoke(t.Context(), &State{Items: []string{"in"}}, graph.RunConfig{ThreadID: "t"}))
	if len(out.Items) != 8 {
		t.Fatalf("the next run continues the thread: %+v", out)
	}
}

// A run in async mode that pauses has written its checkpoints first: the
// interrupt's writes name the last one.
func TestDurabilityAsyncWritesBeforeItReturns(t *testing.T) {
	saver := memory.New()
	c := modeGraph(t, saver, graph.DurabilityAsync, nil, true)
	_, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{ThreadID: "t"})
	var ie *graph.InterruptError
	if !errors.As(err, &ie) {
		t.Fatalf("want an interrupt, got %v", err)
	}
	if got := sources(t, saver, "t"); !slices.Equal(got, []graph.Source{graph.SourceInput, graph.SourceLoop}) {
		t.Fatalf("saved at the interrupt: %v", got)
	}
	out := must[State](t)(c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "t", Resume: "yes"}))
	if !slices.Equal(out.Items, []string{"a", "b", "c"}) {
		t.Fatalf("resumed: %+v", out)
	}
	if got := sources(t, saver, "t"); len(got) != 4 {
		t.Fatalf("checkpoints after the run: %v", got)
	}
}
