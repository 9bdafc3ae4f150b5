package graph_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
)

// orderState has a field merged by a reducer whose result depends on the
// order it is applied in: Trail concatenates.
type orderState struct {
	Items []string
	Trail string
	Count int
}

// orderGraph is START → b00…b07 (each ending at a random moment) → plan,
// which Sends to work once per index below sends (each also ending at a
// random moment) → END.
func orderGraph(t *testing.T, sends int, opts graph.CompileOptions) *graph.Compiled[orderState] {
	t.Helper()
	g := graph.New[orderState](
		graph.Append(func(s *orderState) *[]string { return &s.Items }),
		graph.Reduce(func(s *orderState) *string { return &s.Trail }, func(cur, upd string) string { return cur + upd }),
	)
	jitter := func() {
		// Yield or sleep a random while, so that tasks finish in a
		// different order from run to run.
		switch rand.IntN(3) {
		case 0:
		case 1:
			for range rand.IntN(4) {
				runtime.Gosched()
			}
		default:
			time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
		}
	}
	var branches []string
	for i := range 8 {
		name := fmt.Sprintf("b%02d", i)
		branches = append(branches, name)
		g.AddNode(name, func(ctx context.Context, s orderState) (orderState, error) {
			jitter()
			return orderState{Items: []string{name}, Trail: name + ";"}, nil
		})
		g.AddEdge(graph.START, name)
	}
	g.AddNode("plan", func(ctx context.Context, s orderState) (orderState, error) {
		return orderState{Trail: "plan;"}, nil
	})
	g.AddJoin(branches, "plan")
	g.AddSends("plan", func(ctx context.Context, s orderState) ([]graph.Send[orderState], error) {
		out := make([]graph.Send[orderState], sends)
		for i := range out {
			out[i] = graph.Send[orderState]{Node: "work", State: orderState{Count: i}}
		}
		return out, nil
	}, "work")
	g.AddNode("work", func(ctx context.Context, s orderState) (orderState, error) {
		jitter()
		n := strconv.Itoa(s.Count)
		return orderState{Items: []string{n}, Trail: n + ";"}, nil
	})
	g.AddEdge("work", graph.END)
	c, err := g.Compile(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMergeOrderIsDeterministic runs a fan-out of named branches and then
// of Sends, many times, on every way a step's tasks are run — shared
// between this goroutine and helpers, in a bounded pool, one goroutine
// each while events are relayed, with writes saved as each task ends —
// with tasks finishing in a different order every time: the reducers are
// applied in task order (node name, then Send order) every time.
func TestMergeOrderIsDeterministic(t *testing.T) {
	const sends = 24
	var want []string
	for i := range 8 {
		want = append(want, fmt.Sprintf("b%02d", i))
	}
	wantTrail := strings.Join(want, ";") + ";plan;"
	for i := range sends {
		want = append(want, strconv.Itoa(i))
		wantTrail += strconv.Itoa(i) + ";"
	}
	var thread atomic.Int64
	cases := []struct {
		name string
		opts graph.CompileOptions
		cfg  func() graph.RunConfig
	}{
		{"shared", graph.CompileOptions{}, func() graph.RunConfig { return graph.RunConfig{} }},
		{"pool of 3", graph.CompileOptions{MaxConcurrency: 3}, func() graph.RunConfig { return graph.RunConfig{} }},
		{"streamed", graph.CompileOptions{}, func() graph.RunConfig { return graph.RunConfig{Modes: graph.ModeUpdates} }},
		{"checkpointed", graph.CompileOptions{Checkpointer: memory.New()}, func() graph.RunConfig {
			return graph.RunConfig{ThreadID: fmt.Sprint("order-", thread.Add(1))}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := orderGraph(t, sends, tc.opts)
			for run := range 100 {
				cfg := tc.cfg()
				var out orderState
				if cfg.Modes == 0 {
					var err error
					if out, err = c.Invoke(t.Context(), &orderState{}, cfg); err != nil {
						t.Fatal(err)
					}
				} else {
					var nodes []string
					for ev, err := range c.Stream(t.Context(), &orderState{}, cfg) {
						if err != nil {
							t.Fatal(err)
						}
						nodes = append(nodes, ev.Node)
						out.Items = append(out.Items, ev.State.Items...)
						out.Trail += ev.State.Trail
					}
					// Update events come in the order they are merged in.
					if !slices.IsSorted(nodes[:8]) || nodes[8] != "plan" {
						t.Fatalf("run %d: update events of %v", run, nodes)
					}
				}
				if !slices.Equal(out.Items, want) || out.Trail != wantTrail {
					t.Fatalf("run %d: merged %v, trail %q; want %v, %q", run, out.Items, out.Trail, want, wantTrail)
				}
			}
		})
	}
}
