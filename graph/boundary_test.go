package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
)

// payGraph is START → plan → pay (one task per Send, each paying
// Items[0]) → done → END. The barrier marks a pay task whose item is
// "card"; ran counts each node's runs, gate (when not nil) holds the
// pay of "slow" until it is sent to, and ask makes done interrupt on its
// first run.
type payGraph struct {
	mu   sync.Mutex
	ran  map[string]int
	gate chan struct{}
	ask  bool
	// onPlan, when set, runs as plan starts.
	onPlan func()
}

func (p *payGraph) count(n string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ran[n]++
}

func (p *payGraph) runs(n string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ran[n]
}

func (p *payGraph) compile(t *testing.T, saver graph.Checkpointer, d graph.Durability, items ...string) *graph.Compiled[State] {
	t.Helper()
	if p.ran == nil {
		p.ran = map[string]int{}
	}
	g := newGraph()
	g.AddNode("plan", func(ctx context.Context, s State) (State, error) {
		p.count("plan")
		p.mu.Lock()
		on := p.onPlan
		p.mu.Unlock()
		if on != nil {
			on()
		}
		return State{Items: []string{"plan"}, Total: 1}, nil
	})
	g.AddSends("plan", func(ctx context.Context, s State) ([]graph.Send[State], error) {
		var out []graph.Send[State]
		for _, it := range items {
			out = append(out, graph.Send[State]{Node: "pay", State: State{Items: []string{it}}})
		}
		return out, nil
	}, "pay")
	g.AddNode("pay", func(ctx context.Context, s State) (State, error) {
		p.count("pay " + s.Items[0])
		if s.Items[0] == "slow" && p.gate != nil {
			p.gate <- struct{}{}
			<-p.gate
		}
		return State{Items: []string{"paid " + s.Items[0]}, Total: 1}, nil
	})
	g.AddNode("done", func(ctx context.Context, s State) (State, error) {
		p.count("done")
		if p.ask {
			if _, err := graph.Interrupt[string](ctx, "ok?"); err != nil {
				return State{}, err
			}
		}
		return State{Items: []string{"done"}, Total: 1}, nil
	})
	g.AddEdge(graph.START, "plan")
	g.AddEdge("pay", "done")
	g.AddEdge("done", graph.END)
	g.SetBarrier(func(node string, in *State) bool {
		return node == "pay" && slices.Contains(in.Items, "card")
	})
	return compile(t, g, graph.CompileOptions{Checkpointer: saver, Durability: d})
}

// nexts lists, oldest first, the nodes each of the thread's checkpoints
// plans.
func nexts(t *testing.T, saver graph.Checkpointer, thread string) [][]string {
	t.Helper()
	cps, err := saver.List(t.Context(), graph.ListOptions{ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, cp := range slices.Backward(cps) {
		var n []string
		for _, task := range cp.Tasks {
			n = append(n, task.Node)
		}
		out = append(out, n)
	}
	return out
}

// copySaver is what a crash leaves: the checkpoints and writes saver
// holds now, in a saver of their own.
func copySaver(t *testing.T, saver graph.Checkpointer, thread string) graph.Checkpointer {
	t.Helper()
	crashed := memory.New()
	cps, err := saver.List(t.Context(), graph.ListOptions{ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range slices.Backward(cps) {
		saved, err := saver.Get(t.Context(), graph.Ref{ThreadID: thread, ID: cp.ID})
		if err != nil {
			t.Fatal(err)
		}
		if err := crashed.Put(t.Context(), saved.Checkpoint, saved.Blobs); err != nil {
			t.Fatal(err)
		}
		if len(saved.Writes) > 0 {
			if err := crashed.PutWrites(t.Context(), graph.Ref{ThreadID: thread, ID: cp.ID}, saved.Writes); err != nil {
				t.Fatal(err)
			}
		}
	}
	return crashed
}

func TestParseDurabilityBoundary(t *testing.T) {
	d, err := graph.ParseDurability("boundary")
	if err != nil || d != graph.DurabilityBoundary || d.String() != "boundary" {
		t.Fatalf("%v %v", d, err)
	}
	if _, err := graph.ParseDurability("barrier"); err == nil {
		t.Fatal("an unknown mode was taken")
	}
}

// A run in boundary mode writes its input's checkpoint, the one that
// plans a step the barrier marks (looking at each Send's argument), and
// its last; it ends as a run in sync mode does, turn after turn.
func TestDurabilityBoundaryWritesBarriers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []string
		want  [][]string // each checkpoint's planned nodes, per turn
	}{
		{"no barrier", []string{"cash"}, [][]string{{"plan"}, nil}},
		{"a barrier", []string{"cash", "card"}, [][]string{{"plan"}, {"pay", "pay"}, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var results [2][]State
			for k, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityBoundary} {
				saver := &countingSaver{Checkpointer: memory.New()}
				c := (&payGraph{}).compile(t, saver, d, tc.items...)
				for turn := 1; turn <= 2; turn++ {
					out := must[State](t)(c.Invoke(t.Context(), &State{Items: []string{"in"}}, graph.RunConfig{ThreadID: "t"}))
					snap := must[graph.Snapshot[State]](t)(c.GetState(t.Context(), graph.Ref{ThreadID: "t"}))
					if !slices.Equal(snap.Values.Items, out.Items) || snap.Values.Total != out.Total || len(snap.Next) != 0 {
						t.Fatalf("%s turn %d: stored %+v, returned %+v", d, turn, snap.Values, out)
					}
					results[k] = append(results[k], out)
				}
				if d != graph.DurabilityBoundary {
					continue
				}
				got := nexts(t, saver, "t")
				want := append(slices.Clone(tc.want), tc.want...)
				if !slices.EqualFunc(got, want, slices.Equal) {
					t.Errorf("checkpoints plan %v, want %v", got, want)
				}
			}
			if !slices.EqualFunc(results[0], results[1], func(a, b State) bool { return slices.Equal(a.Items, b.Items) && a.Total == b.Total }) {
				t.Errorf("sync %+v, boundary %+v", results[0], results[1])
			}
		})
	}
}

// A crash in the middle of a barrier step continues from the barrier's
// checkpoint: the steps before it do not run again, and a task of the
// step that finished before the crash keeps its writes and does not run
// again either. Without a barrier the run continues from its input.
func TestDurabilityBoundaryCrashContinuesFromTheBarrier(t *testing.T) {
	for _, tc := range []struct {
		name     string
		items    []string
		plan     int // runs of plan once continued
		finished string
	}{
		{"after a barrier", []string{"card", "slow"}, 1, "pay card"},
		{"no barrier", []string{"cash", "slow"}, 2, "pay cash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saver := memory.New()
			p := &payGraph{gate: make(chan struct{})}
			c := p.compile(t, saver, graph.DurabilityBoundary, tc.items...)
			done := make(chan error, 1)
			go func() {
				_, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{ThreadID: "t"})
				done <- err
			}()
			<-p.gate // slow is paying
			for p.runs(tc.finished) == 0 {
				time.Sleep(time.Millisecond)
			}
			// After a barrier the finished task's writes are saved as it
			// ends, while the step goes on: the crash comes once they are.
			for deadline := time.Now().Add(5 * time.Second); tc.plan == 1; {
				if time.Now().After(deadline) {
					p.gate <- struct{}{}
					t.Fatal("the finished task's writes were not saved")
				}
				saved, err := saver.Get(t.Context(), graph.Ref{ThreadID: "t"})
				if err != nil {
					t.Fatal(err)
				}
				if len(saved.Writes) > 0 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			crashed := copySaver(t, saver, "t")
			p.gate <- struct{}{}
			if err := <-done; err != nil {
				t.Fatal(err)
			}

			q := &payGraph{}
			out := must[State](t)(q.compile(t, crashed, graph.DurabilityBoundary, tc.items...).Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "t"}))
			want := []string{"plan", "paid " + tc.items[0], "paid slow", "done"}
			if !slices.Equal(out.Items, want) || out.Total != 4 {
				t.Fatalf("continued: %+v, want %v", out, want)
			}
			if got := 1 + q.runs("plan"); got != tc.plan {
				t.Errorf("plan ran %d times in all, want %d", got, tc.plan)
			}
			again := q.runs(tc.finished)
			if tc.plan == 1 && again != 0 {
				t.Errorf("%s ran again after the crash", tc.finished)
			}
			if q.runs("pay slow") != 1 {
				t.Errorf("the step cut by the crash ran %d times once continued, want once", q.runs("pay slow"))
			}
		})
	}
}

// A run in boundary mode that pauses saves where it stopped before it
// reports the interrupt, and resumes from there; so does one that is
// stopped.
func TestDurabilityBoundarySavesOnInterrupt(t *testing.T) {
	saver := memory.New()
	p := &payGraph{ask: true}
	c := p.compile(t, saver, graph.DurabilityBoundary, "cash")
	_, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{ThreadID: "t"})
	var ie *graph.InterruptError
	if !errors.As(err, &ie) || len(ie.Interrupts) != 1 {
		t.Fatalf("want one interrupt, got %v", err)
	}
	snap := must[graph.Snapshot[State]](t)(c.GetState(t.Context(), graph.Ref{ThreadID: "t"}))
	if !slices.Equal(snap.Next, []string{"done"}) || len(snap.Interrupts) != 1 || !slices.Equal(snap.Values.Items, []string{"plan", "paid cash"}) {
		t.Fatalf("saved at the interrupt: %+v next %v interrupts %v", snap.Values, snap.Next, snap.Interrupts)
	}
	out := must[State](t)(c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "t", Resume: "yes"}))
	if !slices.Equal(out.Items, []string{"plan", "paid cash", "done"}) || p.runs("plan") != 1 || p.runs("pay cash") != 1 {
		t.Fatalf("resumed: %+v, runs %v", out, p.ran)
	}
}

// batchSaver counts the checkpoints of each PutBatch.
type batchSaver struct {
	graph.Checkpointer
	batches []int
}

func (s *batchSaver) PutBatch(ctx context.Context, puts []graph.CheckpointPut) error {
	s.batches = append(s.batches, len(puts))
	for _, p := range puts {
		if err := s.Put(ctx, p.Checkpoint, p.Blobs); err != nil {
			return err
		}
	}
	return nil
}

// With DeferInput a run writes its input's checkpoint with its next one,
// not before its first step; the thread's history is what it would be
// without, and a BatchPutter gets both in one batch.
func TestDeferInputWritesTheInputWithTheNextCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []string
		want  [][]string
	}{
		{"no barrier", []string{"cash"}, [][]string{{"plan"}, nil}},
		{"a barrier", []string{"cash", "card"}, [][]string{{"plan"}, {"pay", "pay"}, nil}},
	} {
		for _, batch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/batch=%t", tc.name, batch), func(t *testing.T) {
				mem := memory.New()
				var saver graph.Checkpointer = mem
				bs := &batchSaver{Checkpointer: mem}
				if batch {
					saver = bs
				}
				p := &payGraph{}
				c := p.compile(t, saver, graph.DurabilityBoundary, tc.items...)
				for turn := 1; turn <= 2; turn++ {
					before := len(nexts(t, mem, "t"))
					p.mu.Lock()
					p.onPlan = func() {
						if n := len(nexts(t, mem, "t")); n != before {
							t.Errorf("turn %d: %d checkpoints when its first step ran, want the %d before it", turn, n, before)
						}
					}
					p.mu.Unlock()
					out := must[State](t)(c.Invoke(t.Context(), &State{Items: []string{"in"}}, graph.RunConfig{ThreadID: "t", DeferInput: true}))
					if out.Items[0] != "in" || out.Items[len(out.Items)-1] != "done" {
						t.Fatalf("turn %d: %+v", turn, out)
					}
				}
				got := nexts(t, mem, "t")
				if want := append(slices.Clone(tc.want), tc.want...); !slices.EqualFunc(got, want, slices.Equal) {
					t.Errorf("checkpoints plan %v, want %v", got, want)
				}
				cps, err := mem.List(t.Context(), graph.ListOptions{ThreadID: "t"})
				if err != nil {
					t.Fatal(err)
				}
				slices.Reverse(cps)
				for i, cp := range cps {
					if wantInput := i%len(tc.want) == 0; (cp.Source == graph.SourceInput) != wantInput {
						t.Errorf("checkpoint %d is from %s", i, cp.Source)
					}
				}
				if batch && !slices.Equal(bs.batches, []int{2, 2}) {
					t.Errorf("batches %v, want one of two checkpoints a turn", bs.batches)
				}
			})
		}
	}
}

// A run with DeferInput whose first step fails, or that pauses before
// it, still leaves its input's checkpoint, as one without does.
func TestDeferInputWrittenWhenTheRunStopsShort(t *testing.T) {
	boom := errors.New("boom")
	g := newGraph()
	g.AddNode("a", func(ctx context.Context, s State) (State, error) { return State{}, boom })
	g.AddNode("b", func(ctx context.Context, s State) (State, error) { return State{Items: []string{"b"}}, nil })
	g.AddEdge(graph.START, "a")
	g.AddEdge(graph.START, "b")
	g.AddEdge("a", graph.END)
	g.AddEdge("b", graph.END)
	saver := memory.New()
	c := compile(t, g, graph.CompileOptions{Checkpointer: saver, Durability: graph.DurabilityBoundary, InterruptBefore: []string{"b"}})
	if _, err := c.Invoke(t.Context(), &State{Items: []string{"in"}}, graph.RunConfig{ThreadID: "paused", DeferInput: true}); !errors.As(err, new(*graph.InterruptError)) {
		t.Fatalf("run: %v, want an interrupt before b", err)
	}
	c = compile(t, g, graph.CompileOptions{Checkpointer: saver, Durability: graph.DurabilityBoundary})
	if _, err := c.Invoke(t.Context(), &State{Items: []string{"in"}}, graph.RunConfig{ThreadID: "failed", DeferInput: true}); !errors.Is(err, boom) {
		t.Fatalf("run: %v, want boom", err)
	}
	for _, thread := range []string{"paused", "failed"} {
		saved, err := saver.Get(t.Context(), graph.Ref{ThreadID: thread})
		if err != nil {
			t.Fatalf("%s: %v", thread, err)
		}
		if saved.Checkpoint.Source != graph.SourceInput {
			t.Errorf("%s: newest checkpoint from %s, want the input's", thread, saved.Checkpoint.Source)
		}
		if thread == "failed" && len(saved.Writes) == 0 {
			t.Errorf("failed: b's finished writes were not saved against the input's checkpoint")
		}
	}
}
