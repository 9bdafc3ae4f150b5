package graph_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
)

// gauge counts the nodes running at once and keeps the most it saw.
type gauge struct{ running, most atomic.Int32 }

func (g *gauge) enter() {
	n := g.running.Add(1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
}

func (g *gauge) leave() { g.running.Add(-1) }

// fanOut compiles START → plan → n Sends to work → END; each Send carries
// its index in Count, and work appends it to Items.
func fanOut(t *testing.T, n int, work graph.NodeFunc[State], opts graph.CompileOptions, nodeOpts ...graph.NodeOption) *graph.Compiled[State] {
	t.Helper()
	g := newGraph()
	g.AddNode("plan", func(ctx context.Context, s State) (State, error) { return State{}, nil })
	g.AddSends("plan", func(ctx context.Context, s State) ([]graph.Send[State], error) {
		sends := make([]graph.Send[State], n)
		for i := range sends {
			sends[i] = graph.Send[State]{Node: "work", State: State{Count: i}}
		}
		return sends, nil
	}, "work")
	g.AddNode("work", work, nodeOpts...)
	g.AddEdge(graph.START, "plan")
	g.AddEdge("work", graph.END)
	return must[*graph.Compiled[State]](t)(g.Compile(opts))
}

// inOrder is the Items a fan-out of n merges: every index, in Send order.
func inOrder(n int) []string {
	want := make([]string, n)
	for i := range want {
		want[i] = strconv.Itoa(i)
	}
	return want
}

// TestMaxConcurrencyBoundsAStep runs wide fan-outs whose nodes each hold
// for a (fake) millisecond: without a bound every task runs at once, with
// one exactly that many do, whichever path runs the step.
func TestMaxConcurrencyBoundsAStep(t *testing.T) {
	cases := []struct {
		name         string
		compile, run int // MaxConcurrency in CompileOptions and RunConfig
		sends        int
		modes        graph.Mode
		checkpointed bool
		want         int // the most nodes running at once
	}{
		{name: "invoke", compile: 8, sends: 2000, want: 8},
		{name: "stream", compile: 8, sends: 2000, modes: graph.ModeUpdates | graph.ModeCustom, want: 8},
		{name: "checkpointed", run: 8, sends: 2000, checkpointed: true, want: 8},
		{name: "debug events, run overrides the graph", compile: 4, run: 2, sends: 50, modes: graph.ModeDebug, checkpointed: true, want: 2},
		{name: "run lifts the graph's bound", compile: 4, run: -1, sends: 50, want: 50},
		{name: "bound above the step's width", compile: 100, sends: 50, checkpointed: true, want: 50},
		{name: "no bound", sends: 50, want: 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var g gauge
				work := func(ctx context.Context, s State) (State, error) {
					g.enter()
					defer g.leave()
					if err := graph.Emit(ctx, s.Count); err != nil {
						return State{}, err
					}
					time.Sleep(time.Millisecond)
					return State{Items: []string{strconv.Itoa(s.Count)}}, nil
				}
				opts := graph.CompileOptions{MaxConcurrency: tc.compile}
				cfg := graph.RunConfig{MaxConcurrency: tc.run, Modes: tc.modes}
				if tc.modes != 0 {
					cfg.Modes |= graph.ModeValues
				}
				if tc.checkpointed {
					opts.Checkpointer, cfg.ThreadID = memory.New(), "wide"
				}
				c := fanOut(t, tc.sends, work, opts)
				var out State
				starts, ends, updates, customs := 0, 0, 0, 0
				if tc.modes == 0 {
					out = must[State](t)(c.Invoke(t.Context(), &State{}, cfg))
				} else {
					for ev, err := range c.Stream(t.Context(), &State{}, cfg) {
						if err != nil {
							t.Fatal(err)
						}
						switch ev.Mode {
						case graph.ModeValues:
							out = ev.State
						case graph.ModeUpdates:
							updates++
						case graph.ModeCustom:
							customs++
						case graph.ModeDebug:
							switch ev.Data.(graph.DebugEvent).Kind {
							case graph.DebugTaskStart:
								starts++
							case graph.DebugTaskEnd:
								ends++
							}
						}
					}
				}
				if got := g.most.Load(); got != int32(tc.want) {
					t.Errorf("at most %d nodes ran at once, want %d", got, tc.want)
				}
				if !slices.Equal(out.Items, inOrder(tc.sends)) {
					t.Errorf("merged %d items out of Send order: %v…", len(out.Items), out.Items[:min(len(out.Items), 10)])
				}
				if tc.modes&graph.ModeDebug != 0 && (starts != tc.sends+1 || ends != tc.sends+1) {
					t.Errorf("%d task starts and %d ends for %d tasks", starts, ends, tc.sends+1)
				}
				if tc.modes&graph.ModeUpdates != 0 && (updates != tc.sends+1 || customs != tc.sends) {
					t.Errorf("%d updates and %d custom events for %d sends", updates, customs, tc.sends)
				}
			})
		})
	}
}

// TestMaxConcurrencyHoldsThroughRetries: a task keeps its place while it
// waits to retry, so a bound of 4 over 40 tasks that each fail once takes
// ten rounds of attempt, delay, attempt.
func TestMaxConcurrencyHoldsThroughRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, limit = 40, 4
		var g gauge
		tries := make([]atomic.Int32, n)
		work := func(ctx context.Context, s State) (State, error) {
			g.enter()
			defer g.leave()
			time.Sleep(time.Millisecond)
			if tries[s.Count].Add(1) == 1 {
				return State{}, errors.New("transient")
			}
			return State{Items: []string{strconv.Itoa(s.Count)}}, nil
		}
		retry := retrypolicy.NewBuilder[any]().WithMaxAttempts(2).WithDelay(time.Millisecond).Build()
		c := fanOut(t, n, work, graph.CompileOptions{MaxConcurrency: limit}, graph.WithRetry(retry))
		start := time.Now()
		out := must[State](t)(c.Invoke(t.Context(), &State{}, graph.RunConfig{}))
		if took, want := time.Since(start), n/limit*3*time.Millisecond; took != want {
			t.Errorf("the step took %v of fake time, want %v: the bound did not hold through retries", took, want)
		}
		if got := g.most.Load(); got != limit {
			t.Errorf("at most %d attempts ran at once, want %d", got, limit)
		}
		for i := range tries {
			if got := tries[i].Load(); got != 2 {
				t.Errorf("task %d tried %d times, want 2", i, got)
			}
		}
		if !slices.Equal(out.Items, inOrder(n)) {
			t.Errorf("merged out of Send order: %v", out.Items)
		}
	})
}

// TestMaxConcurrencyStepPausesAndResumes: a task that interrupts in a
// bounded step pauses the run; the others' writes are kept, so resuming
// runs only the paused task again.
func TestMaxConcurrencyStepPausesAndResumes(t *testing.T) {
	const n, asks = 20, 7
	runs := make([]atomic.Int32, n)
	work := func(ctx context.Context, s State) (State, error) {
		runs[s.Count].Add(1)
		if s.Count != asks {
			return State{Items: []string{strconv.Itoa(s.Count)}}, nil
		}
		v, err := graph.Interrupt[string](ctx, "which?")
		if err != nil {
			return State{}, err
		}
		return State{Items: []string{v}}, nil
	}
	c := fanOut(t, n, work, graph.CompileOptions{MaxConcurrency: 3, Checkpointer: memory.New()})
	_, err := c.Invoke(t.Context(), &State{}, graph.RunConfig{ThreadID: "paused"})
	var ie *graph.InterruptError
	if !errors.As(err, &ie) || len(ie.Interrupts) != 1 || ie.Interrupts[0].Node != "work" {
		t.Fatalf("got %v, want one interrupt from work", err)
	}
	out := must[State](t)(c.Invoke(t.Context(), nil, graph.RunConfig{ThreadID: "paused", Resume: "seven"}))
	want := inOrder(n)
	want[asks] = "seven"
	if !slices.Equal(out.Items, want) {
		t.Errorf("merged %v, want %v", out.Items, want)
	}
	for i := range runs {
		wantRuns := int32(1)
		if i == asks {
			wantRuns = 2
		}
		if got := runs[i].Load(); got != wantRuns {
			t.Errorf("task %d ran %d times, want %d", i, got, wantRuns)
		}
	}
}

// TestMaxConcurrencyCancelledRunStartsNoMoreTasks: once the run is
// cancelled, the tasks a bound kept waiting are not started; with a
// checkpointer, continuing the thread runs just those.
func TestMaxConcurrencyCancelledRunStartsNoMoreTasks(t *testing.T) {
	for _, checkpointed := range []bool{false, true} {
		t.Run("checkpointed="+strconv.FormatBool(checkpointed), func(t *testing.T) {
			const n = 100
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var ran atomic.Int32
			work := func(context.Context, State) (State, error) {
				if ran.Add(1) == 1 {
					cancel()
				}
				return State{Total: 1}, nil
			}
			opts := graph.CompileOptions{MaxConcurrency: 1}
			cfg := graph.RunConfig{}
			if checkpointed {
				opts.Checkpointer, cfg.ThreadID = memory.New(), "cancelled"
			}
			c := fanOut(t, n, work, opts)
			if _, err := c.Invoke(ctx, &State{}, cfg); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want the cancellation", err)
			}
			if got := ran.Load(); got != 1 {
				t.Fatalf("%d tasks ran after the first cancelled the run, want none", got-1)
			}
			if !checkpointed {
				return
			}
			out := must[State](t)(c.Invoke(t.Context(), nil, cfg))
			if got := ran.Load(); got != n || out.Total != n {
				t.Fatalf("after continuing, %d runs and a total of %d, want %d of each", got, out.Total, n)
			}
		})
	}
}
