package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/graph"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type State struct {
	Items  []string
	Count  int
	Total  int
	Tags   map[string]string
	Answer string
	Route  string
}

func newGraph() *graph.StateGraph[State] {
	return graph.New[State](
		graph.Append(func(s *State) *[]string { return &s.Items }),
		graph.Sum(func(s *State) *int { return &s.Total }),
		graph.Merge(func(s *State) *map[string]string { return &s.Tags }),
	)
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func appendNode(item string) graph.NodeFunc[State] {
	return func(ctx context.Context, s State) (State, error) {
		return State{Items: []string{item}, Total: 1}, nil
	}
}

func TestReducersMergeOnlySetFields(t *testing.T) {
	g := newGraph()
	g.AddNode("a", func(ctx context.Context, s State) (State, error) {
		return State{Items: []string{"a"}, Total: 2, Tags: map[string]string{"x": "1"}, Answer: "first"}, nil
	})
	g.AddNode("b", func(ctx context.Context, s State) (State, error) {
		// Answer is left zero: it must keep a's value.
		return State{Items: []string{"b"}, Total: 3, Tags: map[string]string{"y": "2"}}, nil
	})
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	out, err := c.Invoke(t.Context(), &State{Items: []string{"in"}, Total: 1}, graph.RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Items, []string{"in", "a", "b"}) || out.Total != 6 || out.Answer != "first" ||
		out.Tags["x"] != "1" || out.Tags["y"] != "2" {
		t.Fatalf("got %+v", out)
	}
}

func TestCustomReducerAndDoubleDeclaration(t *testing.T) {
	g := graph.New[State](graph.Reduce(func(s *State) *int { return &s.Count }, func(cur, upd int) int { return max(cur, upd) }))
	g.AddNode("a", func(ctx context.Context, s State) (State, error) { return State{Count: 3}, nil })
	g.AddNode("b", func(ctx context.Context, s State) (State, error) { return State{Count: 2}, nil })
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	out := must[State](t)(c.Invoke(t.Context(), &State{Count: 1}, graph.RunConfig{}))
	if out.Count != 3 {
		t.Fatalf("max reducer: got %d, want 3", out.Count)
	}

	bad := graph.New[State](
		graph.Sum(func(s *State) *int { return &s.Count }),
		graph.Reduce(func(s *State) *int { return &s.Count }, func(a, b int) int { return b }),
	)
	bad.AddNode("a", appendNode("a"))
	bad.AddEdge(graph.START, "a")
	bad.AddEdge("a", graph.END)
	if _, err := bad.Compile(graph.CompileOptions{}); err == nil || !strings.Contains(err.Error(), "Count has two reducers") {
		t.Fatalf("want double-reducer error, got %v", err)
	}
}

func TestCompileValidation(t *testing.T) {
	noop := func(ctx context.Context, s State) (State, error) { return s, nil }
	cases := []struct {
		name  string
		build func(g *graph.StateGraph[State])
		want  []string
	}{
		{"unknown node in edge", func(g *graph.StateGraph[State]) {
			g.AddNode("a", noop)
			g.AddEdge(graph.START, "a")
			g.AddEdge("a", "ghost")
		}, []string{`unknown node "ghost"`}},
		{"duplicate", func(g *graph.StateGraph[State]) {
			g.AddNode("a", noop)
			g.AddNode("a", noop)
			g.AddEdge(graph.START, "a")
			g.AddEdge("a", graph.END)
		}, []string{`node "a" added twice`}},
		{"unreachable", func(g *graph.StateGraph[State]) {
			g.AddNode("a", noop)
			g.AddNode("island", noop)
			g.AddEdge(graph.START, "a")
			g.AddEdge("a", graph.END)
			g.AddEdge("island", graph.END)
		}, []string{`"island" is unreachable`}},
		{"no way to END", func(g *graph.StateGraph[State]) {
			g.AddNode("a", noop)
			g.AddNode("b", noop)
			g.AddEdge(graph.START, "a")
			g.AddEdge("a", "b")
			g.AddEdge("b", "a")
		}, []string{`"a" has no way to END`, `"b" has no way to END`}},
		{"dead end", func(g *graph.StateGraph[State]) {
			g.AddNode("a", noop)
			g.AddEdge(graph.START, "a")
		}, []string{`"a" has no outgoing edge`}},
		{"no start", func(g *graph.StateGraph[State]) {
			g.AddNode("a", noop)
			g.AddEdge("a", graph.END)
		}, []string{"START has no outgoing edge"}},
		{"reserved name", func(g *graph.StateGraph[State]) {
			g.AddNode("a:b", noop)
			g.AddNode("a", noop)
			g.AddEdge(graph.START, "a")
			g.AddEdge("a", graph.END)
		}, []string{`contains ':'`}},
		{"path map to unknown", func(g *graph.StateGraph[State]) {
			g.AddNode("a", noop)
			g.AddEdge(graph.START, "a")
			g.AddConditionalEdges("a", func(ctx context.Context, s State) (string, error) { return "x", nil },
				map[string]string{"x": "nowhere", "done": graph.END})
		}, []string{`unknown node "nowhere"`}},
		{"unknown interrupt node", func(g *graph.StateGraph[State]) {
			g.AddNode("a", noop)
			g.AddEdge(graph.START, "a")
			g.AddEdge("a", graph.END)
		}, []string{`InterruptBefore names unknown node "zzz"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGraph()
			tc.build(g)
			_, err := g.Compile(graph.CompileOptions{InterruptBefore: map[bool][]string{true: {"zzz"}}[tc.name == "unknown interrupt node"]})
			if err == nil {
				t.Fatal("compile succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func loopGraph(t *testing.T, until int) *graph.Compiled[State] {
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
	return must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
}

func TestConditionalLoop(t *testing.T) {
	out := must[State](t)(loopGraph(t, 100).Invoke(t.Context(), &State{}, graph.RunConfig{}))
	if len(out.Items) != 100 || out.Count != 100 {
		t.Fatalf("got %d items, count %d", len(out.Items), out.Count)
	}
}

func TestRecursionLimitNamesLimitAndNodes(t *testing.T) {
	_, err := loopGraph(t, 1000).Invoke(t.Context(), &State{}, graph.RunConfig{RecursionLimit: 7})
	var re *graph.RecursionError
	if !errors.Is(err, graph.ErrRecursionLimit) || !errors.As(err, &re) || re.Limit != 7 || !slices.Equal(re.Nodes, []string{"step"}) {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "7") || !strings.Contains(err.Error(), "step") {
		t.Fatalf("message %q lacks limit or node", err)
	}
}

func fanout(t *testing.T, n int, delay func(i int) time.Duration) *graph.Compiled[State] {
	g := newGraph()
	var names []string
	for i := range n {
		name := fmt.Sprintf("b%d", i)
		names = append(names, name)
		g.AddNode(name, func(ctx context.Context, s State) (State, error) {
			time.Sleep(delay(i))
			return State{Items: []string{name}}, nil
		})
		g.AddEdge(graph.START, name)
		g.AddEdge(name, "join")
	}
	g.AddNode("join", func(ctx context.Context, s State) (State, error) {
		return State{Count: len(s.Items)}, nil
	})
	g.AddEdge("join", graph.END)
	return must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
}

func TestParallelMergeOrderIsByNodeName(t *testing.T) {
	// Later names finish first; the merged order must still be by name.
	c := fanout(t, 5, func(i int) time.Duration { return time.Duration(5-i) * time.Millisecond })
	for range 3 {
		out := must[State](t)(c.Invoke(t.Context(), &State{}, graph.RunConfig{}))
		if !slices.Equal(out.Items, []string{"b0", "b1", "b2", "b3", "b4"}) || out.Count != 5 {
			t.Fatalf("got %v count %d", out.Items, out.Count)
		}
	}
}

func TestParallelReplaceConflictNamesBothNodes(t *testing.T) {
	g := newGraph()
	for _, n := range []string{"left", "right"} {
		g.AddNode(n, func(ctx context.Context, s State) (State, error) { return State{Answer: n}, nil })
		g.AddEdge(graph.START, n)
		g.AddEdge(n, graph.END)
	}
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	_, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{})
	if !errors.Is(err, graph.ErrConcurrentUpdate) || !strings.Contains(err.Error(), "left and right") || !strings.Contains(err.Error(), "Answer") {
		t.Fatalf("got %v", err)
	}
}

func TestParallelNodesAppendingToTheirCopyDoNotRace(t *testing.T) {
	g := newGraph()
	g.AddNode("seed", func(ctx context.Context, s State) (State, error) {
		return State{Items: []string{"seed"}}, nil
	})
	g.AddEdge(graph.START, "seed")
	for _, n := range []string{"a", "b"} {
		g.AddNode(n, func(ctx context.Context, s State) (State, error) {
			// The append reducer leaves spare capacity in the state's
			// slice; both branches appending to it must not collide.
			mine := append(s.Items, n)
			return State{Tags: map[string]string{n: strings.Join(mine, ",")}}, nil
		})
		g.AddEdge("seed", n)
		g.AddEdge(n, graph.END)
	}
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	out := must[State](t)(c.Invoke(t.Context(), &State{Items: []string{"in"}}, graph.RunConfig{}))
	if out.Tags["a"] != "in,seed,a" || out.Tags["b"] != "in,seed,b" {
		t.Fatalf("got %v", out.Tags)
	}
}

func TestSendMapReduce(t *testing.T) {
	g := newGraph()
	g.AddNode("plan", func(ctx context.Context, s State) (State, error) { return State{}, nil })
	g.AddNode("work", func(ctx context.Context, s State) (State, error) {
		// Each task sees its own input, not the graph's state.
		return State{Items: []string{strings.ToUpper(s.Answer)}, Total: len(s.Answer)}, nil
	})
	g.AddNode("reduce", func(ctx context.Context, s State) (State, error) {
		return State{Answer: strings.Join(s.Items, "+")}, nil
	})
	g.AddEdge(graph.START, "plan")
	g.AddSends("plan", func(ctx context.Context, s State) ([]graph.Send[State], error) {
		var out []graph.Send[State]
		for _, w := range []string{"ab", "c", "def"} {
			out = append(out, graph.Send[State]{Node: "work", State: State{Answer: w}})
		}
		return out, nil
	}, "work")
	g.AddEdge("work", "reduce")
	g.AddEdge("reduce", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	out := must[State](t)(c.Invoke(t.Context(), &State{}, graph.RunConfig{}))
	if out.Answer != "AB+C+DEF" || out.Total != 6 {
		t.Fatalf("got %+v", out)
	}
}

func TestCommandGotoAndOverwrite(t *testing.T) {
	g := newGraph()
	g.AddCommandNode("decide", func(ctx context.Context, s State) (graph.Command[State], error) {
		return graph.Command[State]{
			Update: State{Answer: "decided"},
			// Clear the list and zero the counter: impossible with a plain update.
			Overwrite: func(p *State) { p.Items, p.Total = nil, 0 },
			Goto:      []string{"after"},
		}, nil
	}, []string{"after"})
	g.AddNode("after", appendNode("after"))
	g.AddEdge(graph.START, "decide")
	g.AddEdge("after", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	out := must[State](t)(c.Invoke(t.Context(), &State{Items: []string{"old", "older"}, Total: 40}, graph.RunConfig{}))
	if !slices.Equal(out.Items, []string{"after"}) || out.Total != 1 || out.Answer != "decided" {
		t.Fatalf("got %+v", out)
	}
}

func TestJoinWaitsForBranchesOfDifferentLength(t *testing.T) {
	g := newGraph()
	g.AddNode("short", appendNode("short"))
	g.AddNode("long1", appendNode("long1"))
	g.AddNode("long2", appendNode("long2"))
	var joins atomic.Int32
	g.AddNode("join", func(ctx context.Context, s State) (State, error) {
		joins.Add(1)
		return State{Answer: strings.Join(s.Items, ",")}, nil
	})
	g.AddEdge(graph.START, "short")
	g.AddEdge(graph.START, "long1")
	g.AddEdge("long1", "long2")
	g.AddJoin([]string{"short", "long2"}, "join")
	g.AddEdge("join", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	out := must[State](t)(c.Invoke(t.Context(), &State{}, graph.RunConfig{}))
	if joins.Load() != 1 || out.Answer != "long1,short,long2" {
		t.Fatalf("join ran %d times, answer %q", joins.Load(), out.Answer)
	}
}

func TestNodeErrorAndPanic(t *testing.T) {
	boom := errors.New("boom")
	g := newGraph()
	g.AddNode("fails", func(ctx context.Context, s State) (State, error) { return s, boom })
	g.AddEdge(graph.START, "fails")
	g.AddEdge("fails", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	_, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{})
	var ne *graph.NodeError
	if !errors.Is(err, boom) || !errors.As(err, &ne) || ne.Node != "fails" {
		t.Fatalf("got %v", err)
	}

	p := newGraph()
	p.AddNode("panics", func(ctx context.Context, s State) (State, error) {
		var m map[string]int
		m["x"] = 1
		return s, nil
	})
	p.AddEdge(graph.START, "panics")
	p.AddEdge("panics", graph.END)
	pc := must[*graph.Compiled[State]](t)(p.Compile(graph.CompileOptions{}))
	_, err = pc.Invoke(t.Context(), &State{}, graph.RunConfig{})
	var pe *graph.PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "nil map") || !strings.Contains(string(pe.Stack), "graph_test.go") {
		t.Fatalf("got %v", err)
	}
}

func TestRouterErrorsAndUnknownTargets(t *testing.T) {
	g := newGraph()
	g.AddNode("a", appendNode("a"))
	g.AddEdge(graph.START, "a")
	g.AddConditionalEdges("a", func(ctx context.Context, s State) (string, error) { return "ghost", nil }, nil)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	_, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{})
	if !errors.Is(err, graph.ErrUnknownNode) || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("got %v", err)
	}
}

func TestRetryTimeoutAndCache(t *testing.T) {
	var attempts atomic.Int32
	flaky := func(ctx context.Context, s State) (State, error) {
		if attempts.Add(1) < 3 {
			return s, errors.New("transient")
		}
		return State{Answer: "ok"}, nil
	}
	g := newGraph()
	g.AddNode("flaky", flaky, graph.WithRetry(retrypolicy.NewBuilder[any]().WithMaxAttempts(3).Build()))
	g.AddEdge(graph.START, "flaky")
	g.AddEdge("flaky", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	out, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{})
	if err != nil || out.Answer != "ok" || attempts.Load() != 3 {
		t.Fatalf("got %+v, %v after %d attempts", out, err, attempts.Load())
	}

	slow := newGraph()
	slow.AddNode("slow", func(ctx context.Context, s State) (State, error) {
		<-ctx.Done()
		return s, ctx.Err()
	}, graph.WithTimeout(10*time.Millisecond))
	slow.AddEdge(graph.START, "slow")
	slow.AddEdge("slow", graph.END)
	sc := must[*graph.Compiled[State]](t)(slow.Compile(graph.CompileOptions{}))
	if _, err := sc.Invoke(t.Context(), &State{}, graph.RunConfig{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout: got %v", err)
	}

	var calls atomic.Int32
	cached := newGraph()
	cached.AddNode("costly", func(ctx context.Context, s State) (State, error) {
		calls.Add(1)
		return State{Answer: "n=" + fmt.Sprint(s.Count)}, nil
	}, graph.WithCache(graph.CachePolicy{}))
	cached.AddEdge(graph.START, "costly")
	cached.AddEdge("costly", graph.END)
	cc := must[*graph.Compiled[State]](t)(cached.Compile(graph.CompileOptions{}))
	for _, n := range []int{1, 1, 2, 1} {
		out := must[State](t)(cc.Invoke(t.Context(), &State{Count: n}, graph.RunConfig{}))
		if out.Answer != fmt.Sprint("n=", n) {
			t.Fatalf("cached answer %q for %d", out.Answer, n)
		}
	}
	if calls.Load() != 2 {
		t.Fatalf("node ran %d times for 2 distinct inputs", calls.Load())
	}
}

func TestCancelStopsRunningNodes(t *testing.T) {
	g := newGraph()
	started := make(chan struct{})
	g.AddNode("wait", func(ctx context.Context, s State) (State, error) {
		close(started)
		<-ctx.Done()
		return s, ctx.Err()
	})
	g.AddEdge(graph.START, "wait")
	g.AddEdge("wait", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	_, err := c.Invoke(ctx, &State{}, graph.RunConfig{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestStreamModes(t *testing.T) {
	g := newGraph()
	g.AddNode("talk", func(ctx context.Context, s State) (State, error) {
		for _, w := range []string{"hel", "lo"} {
			if err := graph.EmitMessage(ctx, graph.MessageChunk{ID: "m1", Text: w}); err != nil {
				return s, err
			}
		}
		if err := graph.Emit(ctx, "custom!"); err != nil {
			return s, err
		}
		return State{Answer: "hello"}, nil
	})
	g.AddEdge(graph.START, "talk")
	g.AddEdge("talk", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	var got []string
	for ev, err := range c.Stream(t.Context(), &State{}, graph.RunConfig{Modes: graph.ModeValues | graph.ModeUpdates | graph.ModeCustom | graph.ModeMessages | graph.ModeDebug}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Mode {
		case graph.ModeValues:
			got = append(got, "values:"+ev.State.Answer)
		case graph.ModeUpdates:
			got = append(got, "updates:"+ev.Node+":"+ev.State.Answer)
		case graph.ModeCustom:
			got = append(got, fmt.Sprint("custom:", ev.Data))
		case graph.ModeMessages:
			got = append(got, "msg:"+ev.Data.(graph.MessageChunk).Text)
		case graph.ModeDebug:
			got = append(got, "debug:"+string(ev.Data.(graph.DebugEvent).Kind))
		}
	}
	want := []string{"values:", "debug:task_start", "msg:hel", "msg:lo", "custom:custom!", "debug:task_end", "updates:talk:hello", "values:hello"}
	if !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
}

func TestBreakingOutOfStreamCancelsRun(t *testing.T) {
	g := newGraph()
	var stopped atomic.Bool
	g.AddNode("chatty", func(ctx context.Context, s State) (State, error) {
		for i := 0; ; i++ {
			if err := graph.Emit(ctx, i); err != nil {
				stopped.Store(true)
				return s, err
			}
		}
	})
	g.AddEdge(graph.START, "chatty")
	g.AddEdge("chatty", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	n := 0
	for _, err := range c.Stream(t.Context(), &State{}, graph.RunConfig{Modes: graph.ModeCustom, StreamBuffer: 4}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 10 {
			break
		}
	}
	if !stopped.Load() {
		t.Fatal("node did not see the run end")
	}
	// goleak in TestMain proves no goroutine outlived the run.
}

func TestMermaid(t *testing.T) {
	g := newGraph()
	g.AddNode("supervisor", appendNode("s"))
	g.AddNode("tool", appendNode("t"))
	g.AddEdge(graph.START, "supervisor")
	g.AddConditionalEdges("supervisor", func(ctx context.Context, s State) (string, error) { return "answer", nil },
		map[string]string{"answer": graph.END, "call_tool": "tool"})
	g.AddEdge("tool", "supervisor")
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	m := c.Mermaid()
	for _, want := range []string{"flowchart TD", "__start__ --> supervisor", "supervisor -.->|answer| __end__", "supervisor -.->|call_tool| tool", "tool --> supervisor"} {
		if !strings.Contains(m, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, m)
		}
	}
}

func TestContextsDerivedByNodesMayOutliveThem(t *testing.T) {
	var cancels []context.CancelFunc
	g := newGraph()
	g.AddNode("step", func(ctx context.Context, s State) (State, error) {
		// A timeout context left running: its timer reads the node's
		// context after the node has returned and its task is reused.
		_, cancel := context.WithTimeout(ctx, 50*time.Microsecond)
		cancels = append(cancels, cancel)
		time.Sleep(100 * time.Microsecond)
		return State{Count: s.Count + 1}, nil
	})
	g.AddEdge(graph.START, "step")
	g.AddConditionalEdges("step", func(ctx context.Context, s State) (string, error) {
		if s.Count >= 50 {
			return graph.END, nil
		}
		return "step", nil
	}, nil)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	out := must[State](t)(c.Invoke(t.Context(), &State{}, graph.RunConfig{}))
	for _, cancel := range cancels {
		cancel()
	}
	if out.Count != 50 {
		t.Fatalf("count %d", out.Count)
	}
}

// TestSendTasksAreNumberedPerNode: a failing Send task is named by its
// node and its order among that node's Sends.
func TestSendTasksAreNumberedPerNode(t *testing.T) {
	g := newGraph()
	g.AddNode("plan", func(ctx context.Context, s State) (State, error) { return State{}, nil })
	g.AddSends("plan", func(ctx context.Context, s State) ([]graph.Send[State], error) {
		var sends []graph.Send[State]
		for i := range 3 {
			sends = append(sends, graph.Send[State]{Node: "b", State: State{Count: i}}, graph.Send[State]{Node: "a", State: State{Count: i}})
		}
		return sends, nil
	}, "a", "b")
	fail := func(ctx context.Context, s State) (State, error) {
		if s.Count == 1 {
			return State{}, errors.New("no")
		}
		return State{}, nil
	}
	g.AddNode("a", func(ctx context.Context, s State) (State, error) { return State{}, nil })
	g.AddNode("b", fail)
	g.AddEdge(graph.START, "plan")
	g.AddEdge("a", graph.END)
	g.AddEdge("b", graph.END)
	c := must[*graph.Compiled[State]](t)(g.Compile(graph.CompileOptions{}))
	var ne *graph.NodeError
	if _, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{}); !errors.As(err, &ne) || ne.Node != "b#1" {
		t.Fatalf("got %v, want a NodeError naming b#1", err)
	}
}
