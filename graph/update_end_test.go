package graph_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/trellis-ai/trellis/graph"
)

// approvalGraph runs prep, then ask, which waits for an Approval, then
// done. asks and dones count how often ask started and done ran.
func approvalGraph(t *testing.T, asks, dones *atomic.Int32) *graph.Compiled[State] {
	t.Helper()
	g := newGraph()
	g.AddNode("prep", appendNode("prep"))
	g.AddNode("ask", func(ctx context.Context, s State) (State, error) {
		asks.Add(1)
		a, err := graph.Interrupt[Approval](ctx, "go on?")
		if err != nil {
			return s, err
		}
		return State{Answer: a.Reason}, nil
	})
	g.AddNode("done", func(ctx context.Context, s State) (State, error) {
		dones.Add(1)
		return State{Items: []string{"done"}}, nil
	})
	g.AddEdge(graph.START, "prep")
	g.AddEdge("prep", "ask")
	g.AddEdge("ask", "done")
	g.AddEdge("done", graph.END)
	return compile(t, g, graph.CompileOptions{})
}

const allModes = graph.ModeValues | graph.ModeUpdates | graph.ModeCustom | graph.ModeMessages | graph.ModeDebug

func TestUpdateStateAsEndAbandonsInterrupt(t *testing.T) {
	var asks, dones atomic.Int32
	c := approvalGraph(t, &asks, &dones)
	ctx := t.Context()
	ref := graph.Ref{ThreadID: "e"}
	first := interruptOf(t, second(c.Invoke(ctx, &State{}, graph.RunConfig{ThreadID: "e"})))

	id := must[string](t)(c.UpdateState(ctx, ref, graph.END, graph.Command[State]{Update: State{Items: []string{"cancelled"}, Answer: "no"}}))
	snap := must[graph.Snapshot[State]](t)(c.GetState(ctx, ref))
	if snap.Checkpoint.ID != id || snap.Checkpoint.Source != graph.SourceUpdate {
		t.Errorf("newest checkpoint %s (%s), update wrote %s", snap.Checkpoint.ID, snap.Checkpoint.Source, id)
	}
	// The update merged through the reducers onto the state before ask.
	if !slices.Equal(snap.Values.Items, []string{"prep", "cancelled"}) || snap.Values.Answer != "no" || snap.Values.Total != 1 {
		t.Errorf("values %+v", snap.Values)
	}
	if len(snap.Next) != 0 || len(snap.Interrupts) != 0 || len(snap.Checkpoint.Tasks) != 0 {
		t.Errorf("next %v, interrupts %+v, tasks %+v: want nothing pending", snap.Next, snap.Interrupts, snap.Checkpoint.Tasks)
	}

	// Continuing the thread finds nothing to run, and ends without error.
	for ev, err := range c.Stream(ctx, nil, graph.RunConfig{ThreadID: "e", Modes: allModes}) {
		t.Errorf("continuing an ended thread yielded %+v, %v", ev, err)
	}
	// The dropped interrupt cannot be answered any more.
	if _, err := c.Invoke(ctx, nil, graph.RunConfig{ThreadID: "e", Resume: Approval{OK: true}}); !errors.Is(err, graph.ErrUnknownInterrupt) {
		t.Errorf("resume after END: %v", err)
	}
	if asks.Load() != 1 || dones.Load() != 0 {
		t.Errorf("ask started %d times, done ran %d times: want 1, 0", asks.Load(), dones.Load())
	}

	// A new input starts a fresh run from START, which parks anew.
	var nodes []string
	var err error
	for ev, e := range c.Stream(ctx, &State{Items: []string{"again"}}, graph.RunConfig{ThreadID: "e", Modes: graph.ModeUpdates}) {
		if e != nil {
			err = e
			continue
		}
		nodes = append(nodes, ev.Node)
	}
	again := interruptOf(t, err)
	if !slices.Equal(nodes, []string{"prep"}) || len(again) != 1 || again[0].Node != "ask" || again[0].ID == first[0].ID {
		t.Fatalf("fresh run: nodes %v, interrupts %+v (first %+v)", nodes, again, first)
	}
	out := must[State](t)(c.Invoke(ctx, nil, graph.RunConfig{ThreadID: "e", Resume: Approval{OK: true, Reason: "yes"}}))
	if !slices.Equal(out.Items, []string{"prep", "cancelled", "again", "prep", "done"}) || out.Answer != "yes" || dones.Load() != 1 {
		t.Errorf("after the fresh run: %+v, done ran %d times", out, dones.Load())
	}
}

func TestUpdateStateAsEndForgetsJoinArrivals(t *testing.T) {
	g := newGraph()
	g.AddNode("short", appendNode("short"))
	g.AddNode("long", appendNode("long"))
	g.AddNode("ask", func(ctx context.Context, s State) (State, error) {
		if _, err := graph.Interrupt[Approval](ctx, "go on?"); err != nil {
			return s, err
		}
		return State{}, nil
	})
	g.AddNode("join", appendNode("join"))
	g.AddEdge(graph.START, "short")
	g.AddEdge(graph.START, "long")
	g.AddEdge("long", "ask")
	g.AddJoin([]string{"short", "ask"}, "join")
	g.AddEdge("join", graph.END)
	c := compile(t, g, graph.CompileOptions{})
	ctx := t.Context()
	ref := graph.Ref{ThreadID: "j"}
	interruptOf(t, second(c.Invoke(ctx, &State{}, graph.RunConfig{ThreadID: "j"})))
	if snap := must[graph.Snapshot[State]](t)(c.GetState(ctx, ref)); len(snap.Checkpoint.Barriers) == 0 {
		t.Fatalf("parked run: short should have arrived at the join, barriers %v", snap.Checkpoint.Barriers)
	}
	must[string](t)(c.UpdateState(ctx, ref, graph.END, graph.Command[State]{}))
	if snap := must[graph.Snapshot[State]](t)(c.GetState(ctx, ref)); len(snap.Checkpoint.Barriers) != 0 {
		t.Errorf("after END: barriers %v", snap.Checkpoint.Barriers)
	}
}

func TestUpdateStateRejectsUnknownNodeAndRoutingAfterEnd(t *testing.T) {
	var asks, dones atomic.Int32
	c := approvalGraph(t, &asks, &dones)
	ctx := t.Context()
	ref := graph.Ref{ThreadID: "u"}
	parked := interruptOf(t, second(c.Invoke(ctx, &State{}, graph.RunConfig{ThreadID: "u"})))

	if _, err := c.UpdateState(ctx, ref, "nope", graph.Command[State]{}); !errors.Is(err, graph.ErrUnknownNode) {
		t.Errorf("unknown node: %v", err)
	}
	for name, cmd := range map[string]graph.Command[State]{
		"goto": {Goto: []string{"done"}},
		"send": {Send: []graph.Send[State]{{Node: "done"}}},
	} {
		if _, err := c.UpdateState(ctx, ref, graph.END, cmd); err == nil {
			t.Errorf("%s after END: no error", name)
		}
	}
	// Nothing was written: the run is still parked on the same interrupt.
	snap := must[graph.Snapshot[State]](t)(c.GetState(ctx, ref))
	if !slices.Equal(snap.Next, []string{"ask"}) || len(snap.Interrupts) != 1 || snap.Interrupts[0].ID != parked[0].ID {
		t.Errorf("after refused updates: next %v, interrupts %+v", snap.Next, snap.Interrupts)
	}
	// Goto END plans nothing, so it is allowed.
	must[string](t)(c.UpdateState(ctx, ref, graph.END, graph.Command[State]{Goto: []string{graph.END}}))
	if snap := must[graph.Snapshot[State]](t)(c.GetState(ctx, ref)); len(snap.Next) != 0 || len(snap.Interrupts) != 0 {
		t.Errorf("after Goto END: next %v, interrupts %+v", snap.Next, snap.Interrupts)
	}
}
