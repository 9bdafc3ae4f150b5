package graph_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
)

// Each benchmark sits beside a hand-written "floor" doing the same state
// updates in plain Go; engine overhead per node is (engine − floor) / nodes.

type benchState struct {
	Count int
	Items []string
}

func chain10(b *testing.B) *graph.Compiled[benchState] {
	g := graph.New[benchState]()
	prev := graph.START
	for i := range 10 {
		name := fmt.Sprintf("n%d", i)
		g.AddNode(name, func(ctx context.Context, s benchState) (benchState, error) {
			return benchState{Count: s.Count + 1}, nil
		})
		g.AddEdge(prev, name)
		prev = name
	}
	g.AddEdge(prev, graph.END)
	c, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

//go:noinline
func incNode(ctx context.Context, s benchState) (benchState, error) {
	return benchState{Count: s.Count + 1}, nil
}

func BenchmarkChain10(b *testing.B) {
	c := chain10(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Invoke(ctx, &benchState{}, graph.RunConfig{})
		if err != nil || out.Count != 10 {
			b.Fatal(out, err)
		}
	}
}

func BenchmarkChain10Floor(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var s benchState
		for range 10 {
			u, err := incNode(ctx, s)
			if err != nil {
				b.Fatal(err)
			}
			if u.Count != 0 {
				s.Count = u.Count
			}
		}
		if s.Count != 10 {
			b.Fatal(s)
		}
	}
}

func loop100(cp graph.Checkpointer) (*graph.Compiled[benchState], error) {
	g := graph.New[benchState](graph.Append(func(s *benchState) *[]string { return &s.Items }))
	g.AddNode("loop", func(ctx context.Context, s benchState) (benchState, error) {
		return benchState{Items: []string{"x"}}, nil
	})
	g.AddEdge(graph.START, "loop")
	g.AddConditionalEdges("loop", func(ctx context.Context, s benchState) (string, error) {
		if len(s.Items) >= 100 {
			return graph.END, nil
		}
		return "loop", nil
	}, nil)
	return g.Compile(graph.CompileOptions{Checkpointer: cp})
}

//go:noinline
func appendNodeFn(ctx context.Context, s benchState) (benchState, error) {
	return benchState{Items: []string{"x"}}, nil
}

func BenchmarkLoop100(b *testing.B) {
	c, err := loop100(nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Invoke(ctx, &benchState{}, graph.RunConfig{})
		if err != nil || len(out.Items) != 100 {
			b.Fatal(len(out.Items), err)
		}
	}
}

func BenchmarkLoop100Floor(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var s benchState
		for len(s.Items) < 100 {
			u, err := appendNodeFn(ctx, s)
			if err != nil {
				b.Fatal(err)
			}
			s.Items = append(s.Items, u.Items...)
		}
	}
}

// BenchmarkLoop100Memory is loop100 checkpointing every superstep in
// memory; with BenchmarkLoop100 it gives the checkpoint cost per step.
func BenchmarkLoop100Memory(b *testing.B) {
	benchLoopCheckpointed(b, memory.New())
}

func benchLoopCheckpointed(b *testing.B, cp graph.Checkpointer) {
	c, err := loop100(cp)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		out, err := c.Invoke(ctx, &benchState{}, graph.RunConfig{ThreadID: fmt.Sprint("bench-", i)})
		if err != nil || len(out.Items) != 100 {
			b.Fatal(len(out.Items), err)
		}
	}
}

func fanout8() (*graph.Compiled[benchState], error) {
	g := graph.New[benchState](graph.Append(func(s *benchState) *[]string { return &s.Items }))
	for i := range 8 {
		name := fmt.Sprintf("b%d", i)
		g.AddNode(name, func(ctx context.Context, s benchState) (benchState, error) {
			return benchState{Items: []string{name}}, nil
		})
		g.AddEdge(graph.START, name)
		g.AddEdge(name, "join")
	}
	g.AddNode("join", func(ctx context.Context, s benchState) (benchState, error) {
		return benchState{Count: len(s.Items)}, nil
	})
	g.AddEdge("join", graph.END)
	return g.Compile(graph.CompileOptions{})
}

func BenchmarkFanout8(b *testing.B) {
	c, err := fanout8()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Invoke(ctx, &benchState{}, graph.RunConfig{})
		if err != nil || out.Count != 8 {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkFanout8Floor runs the branches in one goroutine each with a
// WaitGroup, then merges in branch order and joins.
func BenchmarkFanout8Floor(b *testing.B) {
	names := make([]string, 8)
	for i := range names {
		names[i] = fmt.Sprintf("b%d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		var s benchState
		outs := make([]benchState, 8)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() { outs[i] = benchState{Items: []string{names[i]}} })
		}
		wg.Wait()
		for _, o := range outs {
			s.Items = append(s.Items, o.Items...)
		}
		s.Count = len(s.Items)
		if s.Count != 8 {
			b.Fatal(s)
		}
	}
}

func BenchmarkStream10(b *testing.B) {
	c := chain10(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for ev, err := range c.Stream(ctx, &benchState{}, graph.RunConfig{Modes: graph.ModeUpdates}) {
			if err != nil {
				b.Fatal(err)
			}
			n += ev.State.Count - ev.State.Count + 1
		}
		if n != 10 {
			b.Fatal(n)
		}
	}
}

// BenchmarkStream10Floor is chain10's floor handing each update to a
// consumer callback.
func BenchmarkStream10Floor(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var s benchState
		n := 0
		consume := func(u benchState) { n++ }
		for range 10 {
			u, _ := incNode(ctx, s)
			s.Count = u.Count
			consume(u)
		}
		if n != 10 {
			b.Fatal(n)
		}
	}
}

// BenchmarkCheckpointBytes reports what one checkpoint writes at step 10
// and at step 1000 of a loop that appends to a list every step.
func BenchmarkCheckpointBytes(b *testing.B) {
	for b.Loop() {
		saver := &countingSaver{Checkpointer: memory.New()}
		g := graph.New[benchState](graph.Append(func(s *benchState) *[]string { return &s.Items }))
		g.AddNode("loop", func(ctx context.Context, s benchState) (benchState, error) {
			return benchState{Items: []string{"a message of some length"}, Count: s.Count + 1}, nil
		})
		g.AddEdge(graph.START, "loop")
		g.AddConditionalEdges("loop", func(ctx context.Context, s benchState) (string, error) {
			if s.Count >= 1000 {
				return graph.END, nil
			}
			return "loop", nil
		}, nil)
		c, err := g.Compile(graph.CompileOptions{Checkpointer: saver})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Invoke(context.Background(), &benchState{}, graph.RunConfig{ThreadID: "bytes"}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(saver.bytes[10]), "bytes@step10")
		b.ReportMetric(float64(saver.bytes[1000]), "bytes@step1000")
	}
}

// BenchmarkSend1000 is a step of 1000 Send tasks, each appending one
// item, run at once or at most 8 at a time, with Invoke and with a
// stream of updates (whose events the run's goroutine relays).
func BenchmarkSend1000(b *testing.B) {
	g := graph.New[benchState](graph.Append(func(s *benchState) *[]string { return &s.Items }))
	g.AddNode("plan", func(ctx context.Context, s benchState) (benchState, error) { return benchState{}, nil })
	g.AddSends("plan", func(ctx context.Context, s benchState) ([]graph.Send[benchState], error) {
		sends := make([]graph.Send[benchState], 1000)
		for i := range sends {
			sends[i] = graph.Send[benchState]{Node: "work", State: benchState{Count: i}}
		}
		return sends, nil
	}, "work")
	g.AddNode("work", func(ctx context.Context, s benchState) (benchState, error) {
		return benchState{Items: []string{"x"}}, nil
	})
	g.AddEdge(graph.START, "plan")
	g.AddEdge("work", graph.END)
	c, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		cfg  graph.RunConfig
	}{
		{"invoke", graph.RunConfig{}},
		{"invoke-limit8", graph.RunConfig{MaxConcurrency: 8}},
		{"stream", graph.RunConfig{Modes: graph.ModeUpdates}},
		{"stream-limit8", graph.RunConfig{Modes: graph.ModeUpdates, MaxConcurrency: 8}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if bc.cfg.Modes == 0 {
					out, err := c.Invoke(ctx, &benchState{}, bc.cfg)
					if err != nil || len(out.Items) != 1000 {
						b.Fatal(len(out.Items), err)
					}
					continue
				}
				n := 0
				for _, err := range c.Stream(ctx, &benchState{}, bc.cfg) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != 1001 {
					b.Fatal(n)
				}
			}
		})
	}
}
