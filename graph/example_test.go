package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
)

// A tiny tool loop: an agent node decides, a tool node acts, until the
// agent has its answer.
func Example_toolLoop() {
	type Agent struct {
		Question string
		Calls    []string
		Result   int
		Answer   string
	}
	g := graph.New[Agent](graph.Append(func(s *Agent) *[]string { return &s.Calls }))
	g.AddNode("agent", func(ctx context.Context, s Agent) (Agent, error) {
		if s.Result > 0 {
			return Agent{Answer: fmt.Sprintf("%s = %d", s.Question, s.Result)}, nil
		}
		return Agent{Calls: []string{"add(2,3)"}}, nil
	})
	g.AddNode("tool", func(ctx context.Context, s Agent) (Agent, error) {
		return Agent{Result: 2 + 3}, nil
	})
	g.AddEdge(graph.START, "agent")
	g.AddConditionalEdges("agent", func(ctx context.Context, s Agent) (string, error) {
		if s.Answer != "" {
			return "done", nil
		}
		return "act", nil
	}, map[string]string{"act": "tool", "done": graph.END})
	g.AddEdge("tool", "agent")
	agent, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		panic(err)
	}
	out, err := agent.Invoke(context.Background(), &Agent{Question: "2+3"}, graph.RunConfig{})
	fmt.Println(out.Answer, out.Calls, err)
	// Output: 2+3 = 5 [add(2,3)] <nil>
}

// Map/reduce with Send: one task per document, each with its own input,
// their results appended in a deterministic order.
func Example_mapReduce() {
	type Job struct {
		Docs    []string
		Doc     string
		Lengths []string
		Total   int
	}
	g := graph.New[Job](
		graph.Append(func(s *Job) *[]string { return &s.Lengths }),
		graph.Sum(func(s *Job) *int { return &s.Total }),
	)
	g.AddNode("split", func(ctx context.Context, s Job) (Job, error) { return Job{}, nil })
	g.AddSends("split", func(ctx context.Context, s Job) ([]graph.Send[Job], error) {
		var sends []graph.Send[Job]
		for _, d := range s.Docs {
			sends = append(sends, graph.Send[Job]{Node: "measure", State: Job{Doc: d}})
		}
		return sends, nil
	}, "measure")
	g.AddNode("measure", func(ctx context.Context, s Job) (Job, error) {
		return Job{Lengths: []string{fmt.Sprintf("%s:%d", s.Doc, len(s.Doc))}, Total: len(s.Doc)}, nil
	})
	g.AddEdge(graph.START, "split")
	g.AddEdge("measure", graph.END)
	job, err := g.Compile(graph.CompileOptions{})
	if err != nil {
		panic(err)
	}
	out, _ := job.Invoke(context.Background(), &Job{Docs: []string{"alpha", "be", "gamma"}}, graph.RunConfig{})
	fmt.Println(strings.Join(out.Lengths, " "), out.Total)
	// Output: alpha:5 be:2 gamma:5 12
}

// An approval: the node pauses with Interrupt, the run ends with an
// *InterruptError, and continuing the thread with a value resumes it.
func Example_approval() {
	type Review struct {
		Action string
		Result string
	}
	type Decision struct {
		Approve bool   `json:"approve"`
		Reason  string `json:"reason"`
	}
	g := graph.New[Review]()
	g.AddNode("act", func(ctx context.Context, s Review) (Review, error) {
		d, err := graph.Interrupt[Decision](ctx, "approve "+s.Action+"?")
		if err != nil {
			return s, err
		}
		if !d.Approve {
			return Review{Result: "rejected: " + d.Reason}, nil
		}
		return Review{Result: "done: " + s.Action}, nil
	})
	g.AddEdge(graph.START, "act")
	g.AddEdge("act", graph.END)
	app, err := g.Compile(graph.CompileOptions{Checkpointer: memory.New()})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	cfg := graph.RunConfig{ThreadID: "review-1"}
	_, err = app.Invoke(ctx, &Review{Action: "drop table"}, cfg)
	var ie *graph.InterruptError
	if errors.As(err, &ie) {
		fmt.Println("asked:", string(ie.Interrupts[0].Payload))
	}
	cfg.Resume = Decision{Approve: false, Reason: "too risky"}
	out, err := app.Invoke(ctx, nil, cfg)
	fmt.Println(out.Result, err)
	// Output:
	// asked: "approve drop table?"
	// rejected: too risky <nil>
}
