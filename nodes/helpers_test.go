package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixedNow is current_time's clock in tests.
var fixedNow = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

type searchIn struct {
	Q string `json:"q" jsonschema:"what to search for"`
}

type pathIn struct {
	Path string `json:"path" jsonschema:"the file to delete"`
}

// testTools is a provider with the built-ins and a few tools the routes
// need: search (returns citable chunks), flaky (fails on "bad"), chart
// (answers the user directly) and delete_file (needs approval). deleted
// records what delete_file deleted.
func testTools(t testing.TB) (*operators.Provider, *[]string) {
	t.Helper()
	local := operators.NewRegistry()
	p := operators.NewProvider(operators.ProviderConfig{Local: local})
	deleted := &[]string{}
	local.MustAdd(operators.Builtins(operators.BuiltinConfig{
		Info:  operators.SelfInfo{Name: "Trellis", Version: "test"},
		Tools: p,
		Now:   func() time.Time { return fixedNow },
	})...)
	local.MustAdd(
		operators.NewTool("search", "Searches the web.", func(ctx context.Context, c operators.Call, in searchIn) (operators.Result, error) {
			return operators.Result{
				Status:   operators.StatusSuccess,
				Contents: []operators.Content{operators.TextContent("2 results for " + in.Q)},
				Chunks: []operators.DataChunk{
					{Source: "https://go.dev/doc/go1.26", Title: "Go 1.26 release notes", Text: "Go 1.26 adds new(expr)."},
					{Source: "https://go.dev/blog", Title: "The Go Blog", Text: "Green tea GC is the default."},
				},
			}, nil
		}, operators.ReadOnly()),
		operators.NewTool("passages", "Searches the conversation's documents.", func(ctx context.Context, c operators.Call, in searchIn) (operators.Result, error) {
			scope, _ := json.Marshal(c.DocumentIDs)
			return operators.Result{
				Status:   operators.StatusSuccess,
				Contents: []operators.Content{operators.TextContent("scope " + string(scope))},
				Chunks: []operators.DataChunk{
					{Source: "document d1, chunk 2", Title: "plan.md", Text: "Launch is on 3 May.",
						Document: &operators.DocumentSpan{DocumentID: "d1", Filename: "plan.md", Chunk: 2, Start: 40, End: 59}},
					{Source: "document d1, chunk 0", Title: "plan.md", Text: "The plan.",
						Document: &operators.DocumentSpan{DocumentID: "d1", Filename: "plan.md", Chunk: 0, Start: 0, End: 9}},
				},
			}, nil
		}, operators.ReadOnly()),
		operators.NewTool("flaky", "Looks something up; fails on bad input.", func(ctx context.Context, c operators.Call, in searchIn) (operators.Result, error) {
			if in.Q == "bad" {
				return operators.Result{}, errors.New("upstream said 400: bad query")
			}
			return operators.TextResult("found " + in.Q), nil
		}),
		operators.NewTool("chart", "Draws a chart for the user.", func(ctx context.Context, c operators.Call, in searchIn) (operators.Result, error) {
			_ = c.Progress(ctx, 1, 2, "drawing")
			if err := c.SendWidget(ctx, "chart", "<svg>"+in.Q+"</svg>"); err != nil {
				return operators.Result{}, err
			}
			return operators.TextResult("chart sent"), nil
		}),
		operators.NewTool("delete_file", "Deletes a file.", func(ctx context.Context, c operators.Call, in pathIn) (operators.Result, error) {
			*deleted = append(*deleted, in.Path)
			return operators.TextResult("deleted " + in.Path), nil
		}, operators.RequiresApproval(), operators.Destructive()),
	)
	return p, deleted
}

// harness is an agent over a scripted model.
type harness struct {
	agent   *nodes.Agent
	model   *llm.Scripted
	deleted *[]string
	saver   graph.Checkpointer
	answers []nodes.Answer
}

func newHarness(t testing.TB, script string, opts nodes.Options) *harness {
	t.Helper()
	reg, model := scriptedModels(t, script)
	h := &harness{model: model, saver: memory.New()}
	tools, deleted := testTools(t)
	h.deleted = deleted
	if opts.Hooks.OnAnswer == nil {
		opts.Hooks.OnAnswer = func(_ context.Context, a nodes.Answer) error {
			h.answers = append(h.answers, a)
			return nil
		}
	}
	agent, err := nodes.New(reg, tools, h.saver, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.agent = agent
	return h
}

// scriptedModels is a registry whose only model, the default, plays
// script.
func scriptedModels(t testing.TB, script string) (*llm.Registry, *llm.Scripted) {
	t.Helper()
	sc, err := llm.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	model := llm.NewScripted(sc)
	reg, err := llm.NewRegistry(llm.Config{
		Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: model, ToolCalling: true}},
		Resilience: llm.ResilienceConfig{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return reg, model
}

// run is what one run yielded.
type run struct {
	events []events.Event
	err    error
}

func collect(seq iter.Seq2[events.Event, error]) run {
	var r run
	for ev, err := range seq {
		r.events = append(r.events, ev)
		if err != nil {
			r.err = err
		}
	}
	return r
}

func (h *harness) run(t testing.TB, conv, msg string) run {
	t.Helper()
	return collect(h.agent.Run(t.Context(), conv, nodes.Input{Message: msg, RequestID: "req-" + msg}))
}

// trace renders the events compactly: node events as "node.start:name",
// tool events with their tool, decisions with their action, chunks
// merged into one "response.chunk*", a node's reasoning chunks into one
// "reasoning.chunk:<node>*".
func (r run) trace() string {
	var out []string
	for _, e := range r.events {
		s := e.Type
		switch d := e.Data.(type) {
		case *events.NodeStart:
			s = "+" + d.Node
		case *events.NodeEnd:
			s = "-" + d.Node
		case *events.SupervisorDecided:
			s += ":" + d.Action
		case *events.ToolStart:
			s += ":" + d.Tool
		case *events.ToolComplete:
			s += ":" + d.Tool
		case *events.ToolError:
			s += ":" + d.Tool
		case *events.ApprovalResolved:
			s += ":" + string(d.Decision)
		case *events.RunInterrupted:
			s += ":" + d.Reason
		case *events.ResponseChunk:
			if len(out) > 0 && out[len(out)-1] == "response.chunk*" {
				continue
			}
			s = "response.chunk*"
		case *events.ReasoningChunk:
			s = "reasoning.chunk:" + d.Node + "*"
			if len(out) > 0 && out[len(out)-1] == s {
				continue
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// last returns the last event of the given type's payload.
func last[T events.Payload](r run) T {
	var zero T
	for i := len(r.events) - 1; i >= 0; i-- {
		if d, ok := r.events[i].Data.(T); ok {
			return d
		}
	}
	return zero
}

// text joins the response chunks.
func (r run) text() string {
	var b strings.Builder
	for _, e := range r.events {
		if c, ok := e.Data.(*events.ResponseChunk); ok {
			b.WriteString(c.Content)
		}
	}
	return b.String()
}

func wantTrace(t testing.TB, r run, want string) {
	t.Helper()
	if got := r.trace(); got != strings.Join(strings.Fields(want), " ") {
		t.Errorf("events:\n got %s\nwant %s", got, strings.Join(strings.Fields(want), " "))
	}
}

func (h *harness) state(t testing.TB, conv string) nodes.ChatState {
	t.Helper()
	snap, err := h.agent.State(t.Context(), conv)
	if err != nil {
		t.Fatal(err)
	}
	return snap.State
}

func (h *harness) allConsumed(t testing.TB) {
	t.Helper()
	if left := h.model.Unconsumed(); len(left) > 0 {
		t.Errorf("script steps never used: %v", left)
	}
}

func roles(msgs []nodes.Message) string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Role))
	}
	return strings.Join(out, ",")
}

func toolNames(rs []nodes.ToolResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Tool+"="+string(r.Status))
	}
	return out
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
