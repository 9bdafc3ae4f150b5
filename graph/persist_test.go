package graph_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
)

type Approval struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason"`
}

func compile(t *testing.T, g *graph.StateGraph[State], opts graph.CompileOptions) *graph.Compiled[State] {
	t.Helper()
	if opts.Checkpointer == nil {
		opts.Checkpointer = memory.New()
	}
	return must[*graph.Compiled[State]](t)(g.Compile(opts))
}

func interruptOf(t *testing.T, err error) []graph.PendingInterrupt {
	t.Helper()
	var ie *graph.InterruptError
	if !errors.As(err, &ie) || !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("want an interrupt, got %v", err)
	}
	return ie.Interrupts
}

func TestInterruptAndResume(t *testing.T) {
	var runs atomic.Int32
	g := newGraph()
	g.AddNode("ask", func(ctx context.Context, s State) (State, error) {
		runs.Add(1)
		a, err := graph.Interrupt[Approval](ctx, map[string]string{"question": "delete it?"})
		if err != nil {
			return s, err
		}
		return State{Answer: "ok=" + map[bool]string{true: "yes", false: "no"}[a.OK] + " " + a.Reason}, nil
	})
	g.AddEdge(graph.START, "ask")
	g.AddEdge("ask", graph.END)
	c := compile(t, g, graph.CompileOptions{})
	cfg := graph.RunConfig{ThreadID: "t1"}

	_, err := c.Invoke(t.Context(), &State{}, cfg)
	ins := interruptOf(t, err)
	if len(ins) != 1 || ins[0].Node != "ask" || !strings.Contains(string(ins[0].Payload), "delete it?") {
		t.Fatalf("interrupts %+v", ins)
	}
	snap := must[graph.Snapshot[State]](t)(c.GetState(t.Context(), graph.Ref{ThreadID: "t1"}))
	if !slices.Equal(snap.Next, []string{"ask"}) || len(snap.Interrupts) != 1 || snap.Interrupts[0].ID != ins[0].ID {
		t.Fatalf("state %+v", snap)
	}

	cfg.Resume = Approval{OK: true, Reason: "fine"}
	out, err := c.Invoke(t.Context(), nil, cfg)
	if err != nil || out.Answer != "ok=yes fine" {
		t.Fatalf("resume: %+v %v", out, err)
	}
	// The answered interrupt must not fire again.
	if _, err := c.Invoke(t.Context(), nil, cfg); !errors.Is(err, graph.ErrUnknownInterrupt) {
		t.Fatalf("second resume: %v", err)
	}
	snap = must[graph.Snapshot[State]](t)(c.GetState(t.Context(), graph.Ref{ThreadID: "t1"}))
	if len(snap.Next) != 0 || len(snap.Interrupts) != 0 || runs.Load() != 2 {
		t.Fatalf("after: next %v interrupts %v runs %d", snap.Next, snap.Interrupts, runs.Load())
	}
}

func TestTwoInterruptsInOneNodeResumeInOrder(t *testing.T) {
	g := newGraph()
	g.AddNode("form", func(ctx context.Context, s State) (State, error) {
		name, err := graph.Interrupt[string](ctx, "name?")
		if err != nil {
			return s, err
		}
		city, err := graph.Interrupt[string](ctx, "city?")
		if err != nil {
			return s, err
		}
		return State{Answer: name + "@" + city}, nil
	})
	g.AddEdge(graph.START, "form")
	g.AddEdge("form", graph.END)
	c := compile(t, g, graph.CompileOptions{})
	cfg := graph.RunConfig{ThreadID: "t"}
	first := interruptOf(t, second(c.Invoke(t.Context(), &State{}, cfg)))
	cfg.Resume = "ada"
	next := interruptOf(t, second(c.Invoke(t.Context(), nil, cfg)))
	if string(next[0].Payload) != `"city?"` || next[0].ID == first[0].ID {
		t.Fatalf("second interrupt %+v (first %+v)", next, first)
	}
	cfg.Resume = "london"
	out := must[State](t)(c.Invoke(t.Context(), nil, cfg))
	if out.Answer != "ada@london" {
		t.Fatalf("got %q", out.Answer)
	}
}

func second[A, B any](_ A, b B) B { return b }

// A node that pauses only after some work learns, through Resumed, that
// its answer is there before it does the work again.
func TestResumedBeforeTheWork(t *testing.T) {
	var work atomic.Int32
	g := newGraph()
	g.AddNode("ask", func(ctx context.Context, s State) (State, error) {
		if graph.Resumed(ctx) {
			answer, err := graph.Interrupt[string](ctx, nil)
			return State{Answer: "answered " + answer}, err
		}
		work.Add(1)
		_, err := graph.Interrupt[string](ctx, "more?")
		return s, err
	})
	g.AddEdge(graph.START, "ask")
	g.AddEdge("ask", graph.END)
	c := compile(t, g, graph.CompileOptions{})
	cfg := graph.RunConfig{ThreadID: "t"}
	if ins := interruptOf(t, second(c.Invoke(t.Context(), &State{}, cfg))); string(ins[0].Payload) != `"more?"` {
		t.Fatalf("interrupt %+v", ins)
	}
	if graph.Resumed(t.Context()) {
		t.Error("Resumed outside a node = true")
	}
	cfg.Resume = "yes"
	out := must[State](t)(c.Invoke(t.Context(), nil, cfg))
	if out.Answer != "answered yes" || work.Load() != 1 {
		t.Fatalf("got %q after %d rounds of work, want one", out.Answer, work.Load())
	}
}

func TestParallelInterruptsAnsweredByID(t *testing.T) {
	var doneRuns atomic.Int32
	g := newGraph()
	for _, n := range []string{"left", "right"} {
		g.AddNode(n, func(ctx context.Context, s State) (State, error) {
			v, err := graph.Interrupt[string](ctx, n)
			if err != nil {
				return s, err
			}
			return State{Items: []string{n + "=" + v}}, nil
		})
		g.AddEdge(graph.START, n)
		g.AddEdge(n, graph.END)
	}
	g.AddNode("done", func(ctx context.Context, s State) (State, error) {
		doneRuns.Add(1)
		return State{Items: []string{"done"}}, nil
	})
	g.AddEdge(graph.START, "done")
	g.AddEdge("done", graph.END)
	c := compile(t, g, graph.CompileOptions{})
	cfg := graph.RunConfig{ThreadID: "p"}
	ins := interruptOf(t, second(c.Invoke(t.Context(), &State{}, cfg)))
	if len(ins) != 2 {
		t.Fatalf("want both branches' interrupts, got %+v", ins)
	}
	byNode := map[string]string{}
	for _, in := range ins {
		byNode[in.Node] = in.ID
	}
	// A single value is ambiguous with two pending.
	if _, err := c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "p", Resume: "x"}); err == nil || !strings.Contains(err.Error(), "by id") {
		t.Fatalf("ambiguous resume: %v", err)
	}
	// Answer one; the other stays pending.
	left := interruptOf(t, second(c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "p", ResumeByID: map[string]any{byNode["right"]: "R"}})))
	if len(left) != 1 || left[0].ID != byNode["left"] {
		t.Fatalf("still pending: %+v", left)
	}
	out := must[State](t)(c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "p", ResumeByID: map[string]any{byNode["left"]: "L"}}))
	if !slices.Equal(out.Items, []string{"done", "left=L", "right=R"}) {
		t.Fatalf("items %v", out.Items)
	}
	if doneRuns.Load() != 1 {
		t.Fatalf("the node that had finished ran %d times", doneRuns.Load())
	}
	if _, err := c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "p", ResumeByID: map[string]any{"nope": 1}}); !errors.Is(err, graph.ErrUnknownInterrupt) {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestFailedStepKeepsFinishedTasks(t *testing.T) {
	var okRuns, flakyRuns atomic.Int32
	g := newGraph()
	g.AddNode("ok", func(ctx context.Context, s State) (State, error) {
		okRuns.Add(1)
		return State{Items: []string{"ok"}}, nil
	})
	g.AddNode("flaky", func(ctx context.Context, s State) (State, error) {
		if flakyRuns.Add(1) == 1 {
			return s, errors.New("first try fails")
		}
		return State{Items: []string{"flaky"}}, nil
	})
	for _, n := range []string{"ok", "flaky"} {
		g.AddEdge(graph.START, n)
		g.AddEdge(n, graph.END)
	}
	c := compile(t, g, graph.CompileOptions{})
	cfg := graph.RunConfig{ThreadID: "f"}
	if _, err := c.Invoke(t.Context(), &State{}, cfg); err == nil || !strings.Contains(err.Error(), "flaky") {
		t.Fatalf("want flaky's error, got %v", err)
	}
	out := must[State](t)(c.Invoke(t.Context(), nil, cfg))
	if okRuns.Load() != 1 || !slices.Equal(out.Items, []string{"flaky", "ok"}) {
		t.Fatalf("ok ran %d times; items %v", okRuns.Load(), out.Items)
	}
}

func TestContinueFailsLoudlyWithoutCheckpoint(t *testing.T) {
	c := compile(t, loopGraphBuilder(3), graph.CompileOptions{})
	_, err := c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "never-ran"})
	if !errors.Is(err, graph.ErrCheckpointNotFound) {
		t.Fatalf("got %v", err)
	}
	_, err = c.Invoke(t.Context(), nil, graph.RunConfig{})
	if !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Fatalf("no thread: %v", err)
	}
	if _, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{ThreadID: "x", CheckpointID: "missing"}); !errors.Is(err, graph.ErrCheckpointNotFound) {
		t.Fatalf("unknown checkpoint: %v", err)
	}
}

func loopGraphBuilder(until int) *graph.StateGraph[State] {
	g := newGraph()
	g.AddNode("step", func(ctx context.Context, s State) (State, error) {
		return State{Items: []string{"x"}, Count: s.Count + 1}, nil
	})
	g.AddEdge(graph.START, "step")
	g.AddConditionalEdges("step", func(ctx context.Context, s State) (string, error) {
		if s.Count >= until {
			return "done", nil
		}
		return "again", nil
	}, map[string]string{"again": "step", "done": graph.END})
	return g
}

func TestCheckpointEveryStepAndHistory(t *testing.T) {
	c := compile(t, loopGraphBuilder(3), graph.CompileOptions{})
	cfg := graph.RunConfig{ThreadID: "h"}
	must[State](t)(c.Invoke(t.Context(), &State{Answer: "q1"}, cfg))
	hist := must[[]graph.Snapshot[State]](t)(c.History(t.Context(), "h", graph.HistoryOptions{}))
	// input + 3 steps
	if len(hist) != 4 {
		t.Fatalf("want 4 checkpoints, got %d", len(hist))
	}
	for i, want := range []int{3, 2, 1, 0} {
		if hist[i].Values.Count != want || len(hist[i].Values.Items) != want {
			t.Errorf("history[%d]: count %d items %d, want %d", i, hist[i].Values.Count, len(hist[i].Values.Items), want)
		}
	}
	if hist[3].Checkpoint.Source != graph.SourceInput || hist[0].Checkpoint.Source != graph.SourceLoop {
		t.Errorf("sources %s, %s", hist[3].Checkpoint.Source, hist[0].Checkpoint.Source)
	}
	for i := range 3 {
		if hist[i].Checkpoint.ParentID != hist[i+1].Checkpoint.ID {
			t.Errorf("history[%d] parent %s, want %s", i, hist[i].Checkpoint.ParentID, hist[i+1].Checkpoint.ID)
		}
	}
	page := must[[]graph.Snapshot[State]](t)(c.History(t.Context(), "h", graph.HistoryOptions{Limit: 2, Before: hist[0].Checkpoint.ID}))
	if len(page) != 2 || page[0].Checkpoint.ID != hist[1].Checkpoint.ID {
		t.Fatalf("page %v", page)
	}

	// A second turn on the thread continues from its state.
	out := must[State](t)(c.Invoke(t.Context(), &State{Answer: "q2"}, cfg))
	if out.Count != 4 || len(out.Items) != 4 || out.Answer != "q2" {
		t.Fatalf("second turn %+v", out)
	}
}

func TestForkFromPastCheckpointKeepsHistory(t *testing.T) {
	c := compile(t, loopGraphBuilder(3), graph.CompileOptions{})
	cfg := graph.RunConfig{ThreadID: "fork"}
	must[State](t)(c.Invoke(t.Context(), &State{}, cfg))
	hist := must[[]graph.Snapshot[State]](t)(c.History(t.Context(), "fork", graph.HistoryOptions{}))
	input := hist[len(hist)-1].Checkpoint.ID

	// Edit-and-rerun: new input on top of the checkpoint before the turn.
	out := must[State](t)(c.Invoke(t.Context(), &State{Count: 1, Answer: "edited"}, graph.RunConfig{ThreadID: "fork", CheckpointID: input}))
	if out.Count != 3 || len(out.Items) != 2 || out.Answer != "edited" {
		t.Fatalf("fork result %+v", out)
	}
	all := must[[]graph.Snapshot[State]](t)(c.History(t.Context(), "fork", graph.HistoryOptions{}))
	if len(all) != len(hist)+3 {
		t.Fatalf("history has %d checkpoints, want %d", len(all), len(hist)+3)
	}
	latest := must[graph.Snapshot[State]](t)(c.GetState(t.Context(), graph.Ref{ThreadID: "fork"}))
	if latest.Values.Answer != "edited" {
		t.Fatalf("latest %+v", latest.Values)
	}
	old := must[graph.Snapshot[State]](t)(c.GetState(t.Context(), graph.Ref{ThreadID: "fork", ID: hist[0].Checkpoint.ID}))
	if old.Values.Count != 3 || len(old.Values.Items) != 3 || old.Values.Answer != "" {
		t.Fatalf("old branch changed: %+v", old.Values)
	}
}

func TestUpdateStateAsNode(t *testing.T) {
	g := newGraph()
	g.AddNode("draft", func(ctx context.Context, s State) (State, error) { return State{Answer: "draft"}, nil })
	g.AddNode("review", func(ctx context.Context, s State) (State, error) {
		return State{Items: []string{"reviewed " + s.Answer}}, nil
	})
	g.AddEdge(graph.START, "draft")
	g.AddEdge("draft", "review")
	g.AddEdge("review", graph.END)
	c := compile(t, g, graph.CompileOptions{InterruptBefore: []string{"review"}})
	cfg := graph.RunConfig{ThreadID: "u"}
	ins := interruptOf(t, second(c.Invoke(t.Context(), &State{}, cfg)))
	if ins[0].When != "before" || ins[0].Node != "review" {
		t.Fatalf("static interrupt %+v", ins)
	}
	// A human edits the draft as if "draft" had written it.
	must[string](t)(c.UpdateState(t.Context(), graph.Ref{ThreadID: "u"}, "draft", graph.Command[State]{Update: State{Answer: "edited"}}))
	out := must[State](t)(c.Invoke(t.Context(), nil, cfg))
	if !slices.Equal(out.Items, []string{"reviewed edited"}) {
		t.Fatalf("got %v", out.Items)
	}
}

func TestStaticInterruptAfterPerRun(t *testing.T) {
	c := compile(t, loopGraphBuilder(3), graph.CompileOptions{})
	cfg := graph.RunConfig{ThreadID: "a", InterruptAfter: []string{"step"}}
	n := 0
	for {
		out, err := c.Invoke(t.Context(), map[bool]*State{true: {}}[n == 0], cfg)
		if err == nil {
			if out.Count != 3 || n != 3 {
				t.Fatalf("count %d after %d pauses", out.Count, n)
			}
			return
		}
		if ins := interruptOf(t, err); ins[0].When != "after" || out.Count != n+1 {
			t.Fatalf("pause %d: %+v count %d", n, ins, out.Count)
		}
		n++
	}
}

func TestDeleteThread(t *testing.T) {
	c := compile(t, loopGraphBuilder(2), graph.CompileOptions{})
	must[State](t)(c.Invoke(t.Context(), &State{}, graph.RunConfig{ThreadID: "d"}))
	if err := c.DeleteThread(t.Context(), "d"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetState(t.Context(), graph.Ref{ThreadID: "d"}); !errors.Is(err, graph.ErrCheckpointNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

// countingSaver measures what a run writes.
type countingSaver struct {
	graph.Checkpointer
	bytes []int
}

func (s *countingSaver) Put(ctx context.Context, cp graph.Checkpoint, blobs []graph.Blob) error {
	n := 0
	for _, b := range blobs {
		n += len(b.Data)
	}
	body, _ := graph.EncodeCheckpoint(cp)
	s.bytes = append(s.bytes, n+len(body))
	return s.Checkpointer.Put(ctx, cp, blobs)
}

func TestCheckpointBytesDoNotGrowWithHistory(t *testing.T) {
	saver := &countingSaver{Checkpointer: memory.New()}
	c := compile(t, loopGraphBuilder(1000), graph.CompileOptions{Checkpointer: saver})
	out := must[State](t)(c.Invoke(t.Context(), &State{}, graph.RunConfig{ThreadID: "big"}))
	if len(out.Items) != 1000 {
		t.Fatalf("items %d", len(out.Items))
	}
	// A step writes what it appended; every 16th, 256th step also merges
	// the chain's newest blobs, so the measure is a mean over many steps.
	mean := func(from, to int) float64 {
		n := 0
		for _, b := range saver.bytes[from:to] {
			n += b
		}
		return float64(n) / float64(to-from)
	}
	early, late := mean(1, 513), mean(489, 1001)
	if late > 1.1*early {
		t.Fatalf("steps 489 to 1000 wrote %.0f bytes each, steps 1 to 512 %.0f", late, early)
	}
	// The deltas rebuild the whole list, through a short chain.
	saved, err := saver.Get(t.Context(), graph.Ref{ThreadID: "big"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mean bytes a step: %.0f early, %.0f late; the newest checkpoint reads %d blobs", early, late, len(saved.Blobs))
	if len(saved.Blobs) > 40 {
		t.Errorf("the newest checkpoint reads %d blobs back", len(saved.Blobs))
	}
	snap := must[graph.Snapshot[State]](t)(c.GetState(t.Context(), graph.Ref{ThreadID: "big"}))
	if len(snap.Values.Items) != 1000 || snap.Values.Count != 1000 {
		t.Fatalf("restored %d items, count %d", len(snap.Values.Items), snap.Values.Count)
	}
	for i, it := range snap.Values.Items {
		if it != "x" {
			t.Fatalf("item %d is %q", i, it)
		}
	}
}

func TestSubgraphEventsInterruptsAndResume(t *testing.T) {
	sub := newGraph()
	sub.AddNode("inner", func(ctx context.Context, s State) (State, error) {
		if err := graph.Emit(ctx, "inside"); err != nil {
			return s, err
		}
		ok, err := graph.Interrupt[bool](ctx, "continue?")
		if err != nil {
			return s, err
		}
		return State{Items: []string{"inner"}, Answer: map[bool]string{true: "yes", false: "no"}[ok]}, nil
	})
	sub.AddEdge(graph.START, "inner")
	sub.AddEdge("inner", graph.END)
	subc := must[*graph.Compiled[State]](t)(sub.Compile(graph.CompileOptions{}))

	g := newGraph()
	g.AddNode("before", appendNode("before"))
	g.AddSubgraph("child", subc)
	g.AddNode("after", appendNode("after"))
	g.AddEdge(graph.START, "before")
	g.AddEdge("before", "child")
	g.AddEdge("child", "after")
	g.AddEdge("after", graph.END)
	c := compile(t, g, graph.CompileOptions{})

	var custom []graph.Event[State]
	var last error
	for ev, err := range c.Stream(t.Context(), &State{}, graph.RunConfig{ThreadID: "s", Modes: graph.ModeCustom}) {
		if err != nil {
			last = err
			continue
		}
		custom = append(custom, ev)
	}
	ins := interruptOf(t, last)
	if len(custom) != 1 || custom[0].Data != "inside" || len(custom[0].Namespace) != 1 || !strings.HasPrefix(custom[0].Namespace[0], "child:") {
		t.Fatalf("subgraph events %+v", custom)
	}
	if len(ins) != 1 || string(ins[0].Payload) != `"continue?"` {
		t.Fatalf("interrupts %+v", ins)
	}
	out := must[State](t)(c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "s", Resume: true}))
	if !slices.Equal(out.Items, []string{"before", "inner", "after"}) || out.Answer != "yes" || out.Total != 2 {
		t.Fatalf("got %+v", out)
	}
	if !strings.Contains(c.Mermaid(), "subgraph child") {
		t.Fatalf("mermaid lacks the subgraph:\n%s", c.Mermaid())
	}
}

func TestParallelSubgraphStreamsNamespacedEvents(t *testing.T) {
	sub := newGraph()
	sub.AddNode("inner", appendNode("inner"))
	sub.AddEdge(graph.START, "inner")
	sub.AddEdge("inner", graph.END)
	subc := must[*graph.Compiled[State]](t)(sub.Compile(graph.CompileOptions{}))

	g := newGraph()
	g.AddSubgraph("child", subc)
	g.AddNode("aside", appendNode("aside")) // sorts first: the subgraph runs in a goroutine of its own
	g.AddEdge(graph.START, "child")
	g.AddEdge(graph.START, "aside")
	g.AddEdge("child", graph.END)
	g.AddEdge("aside", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))

	var nested []string
	for ev, err := range c.Stream(t.Context(), &State{}, graph.RunConfig{Modes: graph.ModeValues | graph.ModeUpdates}) {
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Namespace) > 0 && ev.Mode == graph.ModeUpdates {
			nested = append(nested, ev.Namespace[0][:len("child:")]+ev.Node)
		}
	}
	if !slices.Equal(nested, []string{"child:inner"}) {
		t.Fatalf("nested updates %v", nested)
	}
}

func TestCancelKeepsLastCompletedStep(t *testing.T) {
	g := newGraph()
	block := make(chan struct{})
	var blocking atomic.Bool
	blocking.Store(true)
	g.AddNode("first", appendNode("first"))
	g.AddNode("second", func(ctx context.Context, s State) (State, error) {
		if blocking.Load() {
			close(block)
			<-ctx.Done()
			return s, ctx.Err()
		}
		return State{Items: []string{"second"}}, nil
	})
	g.AddEdge(graph.START, "first")
	g.AddEdge("first", "second")
	g.AddEdge("second", graph.END)
	c := compile(t, g, graph.CompileOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-block; cancel() }()
	if _, err := c.Invoke(ctx, &State{}, graph.RunConfig{ThreadID: "c"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	snap := must[graph.Snapshot[State]](t)(c.GetState(t.Context(), graph.Ref{ThreadID: "c"}))
	if !slices.Equal(snap.Values.Items, []string{"first"}) || !slices.Equal(snap.Next, []string{"second"}) {
		t.Fatalf("after cancel: items %v next %v", snap.Values.Items, snap.Next)
	}
	blocking.Store(false)
	out := must[State](t)(c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "c"}))
	if !slices.Equal(out.Items, []string{"first", "second"}) {
		t.Fatalf("continued: %v", out.Items)
	}
}

// Two graphs a node runs side by side under names of their own keep their
// own checkpoints: when one pauses, the node runs again on resume, the
// finished one returns its answer without running again, and the paused
// one goes on with its resume value.
func TestNamedChildRunsKeepTheirOwnCheckpoints(t *testing.T) {
	var runs atomic.Int32
	sub := newGraph()
	sub.AddNode("work", func(ctx context.Context, s State) (State, error) {
		runs.Add(1)
		if s.Route == "ask" {
			ok, err := graph.Interrupt[bool](ctx, "go on?")
			if err != nil || !ok {
				return s, err
			}
		}
		return State{Answer: "done " + s.Route}, nil
	})
	sub.AddEdge(graph.START, "work")
	sub.AddEdge("work", graph.END)
	subc := must[*graph.Compiled[State]](t)(sub.Compile(graph.CompileOptions{}))

	g := newGraph()
	g.AddNode("fan", func(ctx context.Context, s State) (State, error) {
		var answers [2]string
		var errs [2]error
		done := make(chan int, 2)
		for i, route := range []string{"plain", "ask"} {
			go func() {
				out, err := subc.Invoke(graph.Child(ctx, "@"+route), &State{Route: route}, graph.RunConfig{})
				answers[i], errs[i] = out.Answer, err
				done <- i
			}()
		}
		<-done
		<-done
		var all []graph.PendingInterrupt
		for _, err := range errs {
			var ie *graph.InterruptError
			if errors.As(err, &ie) {
				all = append(all, ie.Interrupts...)
			} else if err != nil {
				return s, err
			}
		}
		if len(all) > 0 {
			return s, &graph.InterruptError{Interrupts: all}
		}
		return State{Items: answers[:]}, nil
	})
	g.AddEdge(graph.START, "fan")
	g.AddEdge("fan", graph.END)
	c := compile(t, g, graph.CompileOptions{})

	_, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{ThreadID: "n"})
	ins := interruptOf(t, err)
	if len(ins) != 1 || !strings.Contains(ins[0].Namespace, "@ask") || runs.Load() != 2 {
		t.Fatalf("interrupts %+v, runs %d", ins, runs.Load())
	}
	out := must[State](t)(c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "n", ResumeByID: map[string]any{ins[0].ID: true}}))
	if !slices.Equal(out.Items, []string{"done plain", "done ask"}) {
		t.Fatalf("got %+v", out)
	}
	if n := runs.Load(); n != 3 { // the paused one again; the finished one not
		t.Errorf("the children's node ran %d times, want 3", n)
	}
}

// TestCheckpointsRecordTheirRun: every checkpoint names the run that
// wrote it, a subgraph's too, and a run that resumes another's pause
// names itself on what it writes.
func TestCheckpointsRecordTheirRun(t *testing.T) {
	sub := newGraph()
	sub.AddNode("inner", func(ctx context.Context, s State) (State, error) {
		if err := graph.Emit(ctx, "inside"); err != nil {
			return s, err
		}
		if _, err := graph.Interrupt[bool](ctx, "continue?"); err != nil {
			return s, err
		}
		return State{Items: []string{"inner"}}, nil
	})
	sub.AddEdge(graph.START, "inner")
	sub.AddEdge("inner", graph.END)
	g := newGraph()
	g.AddNode("before", appendNode("before"))
	g.AddSubgraph("child", must[*graph.Compiled[State]](t)(sub.Compile(graph.CompileOptions{})))
	g.AddEdge(graph.START, "before")
	g.AddEdge("before", "child")
	g.AddEdge("child", graph.END)
	saver := memory.New()
	c := compile(t, g, graph.CompileOptions{Checkpointer: saver})

	var ns []string
	for ev, err := range c.Stream(t.Context(), &State{}, graph.RunConfig{ThreadID: "r", RunID: "run-1", Modes: graph.ModeCustom}) {
		if err == nil && len(ev.Namespace) > 0 {
			ns = ev.Namespace
		}
	}
	runsOf := func(ns string) []string {
		cps := must[[]graph.Checkpoint](t)(saver.List(t.Context(), graph.ListOptions{ThreadID: "r", Namespace: ns}))
		var out []string
		for _, cp := range slices.Backward(cps) {
			out = append(out, cp.RunID)
		}
		return out
	}
	if got := runsOf(""); len(got) != 2 || got[0] != "run-1" || got[1] != "run-1" {
		t.Fatalf("root checkpoints of the first run: %v", got)
	}
	if len(ns) != 1 {
		t.Fatalf("no subgraph event reached the stream")
	}
	if got := runsOf(ns[0]); len(got) == 0 || slices.ContainsFunc(got, func(id string) bool { return id != "run-1" }) {
		t.Fatalf("subgraph checkpoints of the first run: %v", got)
	}
	must[State](t)(c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "r", Resume: true, RunID: "run-2"}))
	root, child := runsOf(""), runsOf(ns[0])
	if root[len(root)-1] != "run-2" || child[len(child)-1] != "run-2" || root[1] != "run-1" {
		t.Fatalf("after the resume: root %v, subgraph %v", root, child)
	}
}
