package nodes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// Instant scripts: no delays, every step repeats.
const (
	benchAnswerScript = `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER", "reasoning": "easy"}, "usage": {"input_tokens": 10, "output_tokens": 2}}, "repeat": true},
		{"match": {"node": "write"}, "reply": {"text": "Hello there, friend.", "usage": {"input_tokens": 12, "output_tokens": 4}}, "repeat": true}
	]}`
	benchToolScript = `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"tool_calls": [{"id": "c1", "name": "calculator", "args": {"expression": "6*7"}}]}, "repeat": true},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}, "repeat": true},
		{"match": {"node": "write"}, "reply": {"text": "It is 42.", "usage": {"input_tokens": 12, "output_tokens": 4}}, "repeat": true}
	]}`
)

func benchAgent(b *testing.B, script string) (*nodes.Agent, *llm.Scripted, *operators.Provider) {
	b.Helper()
	sc, err := llm.ParseScript([]byte(script))
	if err != nil {
		b.Fatal(err)
	}
	m := llm.NewScripted(sc)
	reg, err := llm.NewRegistry(llm.Config{
		Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: m, ToolCalling: true}},
		Resilience: llm.ResilienceConfig{Disabled: true},
	})
	if err != nil {
		b.Fatal(err)
	}
	tools, _ := testTools(b)
	a, err := nodes.New(reg, tools, memory.New(), nodes.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return a, m, tools
}

func benchRuns(b *testing.B, script, msg string) {
	a, _, _ := benchAgent(b, script)
	timeRuns(b, a, msg)
}

// timeRuns times a's runs of msg, each in a conversation of its own.
func timeRuns(b *testing.B, a *nodes.Agent, msg string) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		var final events.Event
		for ev, err := range a.Run(ctx, "bench-"+strconv.Itoa(i), nodes.Input{Message: msg}) {
			if err != nil {
				b.Fatal(err)
			}
			final = ev
		}
		if final.Type != events.TypeRunCompleted {
			b.Fatalf("run ended with %s", final.Type)
		}
	}
}

// BenchmarkAgentAnswer is the answer path: initialize → supervisor →
// write → stream, with an in-memory checkpoint after every step.
func BenchmarkAgentAnswer(b *testing.B) { benchRuns(b, benchAnswerScript, "hi") }

// BenchmarkAgentOneTool is the one-tool path: … → execute_tool → reflect
// → synthesize → write → stream.
func BenchmarkAgentOneTool(b *testing.B) { benchRuns(b, benchToolScript, "what is 6*7?") }

// BenchmarkAgentCallLog is the one-tool path with a CallLog, its tool,
// the same in both, annotated read-only (its call is not recorded) or not
// annotated (its start is recorded before the call, its outcome after).
// The log keeps nothing, so what differs is the agent's part of
// recording; api's BenchmarkSyncChatCall adds the store's.
func BenchmarkAgentCallLog(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []operators.ToolOption
	}{{"call=read-only", []operators.ToolOption{operators.ReadOnly()}}, {"call=recorded", nil}} {
		b.Run(tc.name, func(b *testing.B) {
			sc, err := llm.ParseScript([]byte(benchCallScript))
			if err != nil {
				b.Fatal(err)
			}
			reg, err := llm.NewRegistry(llm.Config{
				Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: llm.NewScripted(sc), ToolCalling: true}},
				Resilience: llm.ResilienceConfig{Disabled: true},
			})
			if err != nil {
				b.Fatal(err)
			}
			local := operators.NewRegistry()
			local.MustAdd(operators.NewTool("tally", "Counts.", func(context.Context, operators.Call, searchIn) (operators.Result, error) {
				return operators.TextResult("42"), nil
			}, tc.opts...))
			a, err := nodes.New(reg, operators.NewProvider(operators.ProviderConfig{Local: local}), memory.New(), nodes.Options{Calls: discardCalls{}})
			if err != nil {
				b.Fatal(err)
			}
			timeRuns(b, a, "tally it")
		})
	}
}

// benchCallScript is benchToolScript calling tally, which
// BenchmarkAgentCallLog registers.
const benchCallScript = `{"steps": [
	{"match": {"node": "supervisor"}, "reply": {"tool_calls": [{"id": "c1", "name": "tally", "args": {"q": "6*7"}}]}, "repeat": true},
	{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}, "repeat": true},
	{"match": {"node": "write"}, "reply": {"text": "It is 42.", "usage": {"input_tokens": 12, "output_tokens": 4}}, "repeat": true}
]}`

// discardCalls is a CallLog that keeps nothing: every call starts afresh.
type discardCalls struct{}

func (discardCalls) Begin(context.Context, string, string, string) (nodes.CallRecord, error) {
	return nodes.CallRecord{}, nil
}

func (discardCalls) Asking(context.Context, string) error { return nil }

func (discardCalls) End(context.Context, string, json.RawMessage) error { return nil }

// BenchmarkBareAnswer makes the answer path's model calls by hand: the
// floor the agent's overhead is measured against.
func BenchmarkBareAnswer(b *testing.B) {
	_, m, tools := benchAgent(b, benchAnswerScript)
	ctx := context.Background()
	defs := tools.LLMTools()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		msgs := []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, nodes.DefaultSystemPrompt),
			llms.TextParts(llms.ChatMessageTypeHuman, "hi"),
		}
		if _, err := m.GenerateContent(llm.WithNode(ctx, "supervisor"), msgs, llms.WithTools(defs)); err != nil {
			b.Fatal(err)
		}
		var out []byte
		resp, err := m.GenerateContent(llm.WithNode(ctx, "write"), msgs, llms.WithStreamingFunc(func(_ context.Context, c []byte) error {
			out = append(out, c...)
			return nil
		}))
		if err != nil || llm.TextFrom(resp) == "" {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareOneTool makes the one-tool path's model calls and runs the
// tool by hand.
func BenchmarkBareOneTool(b *testing.B) {
	_, m, tools := benchAgent(b, benchToolScript)
	ctx := context.Background()
	defs := tools.LLMTools()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		msgs := []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, nodes.DefaultSystemPrompt),
			llms.TextParts(llms.ChatMessageTypeHuman, "what is 6*7?"),
		}
		resp, err := m.GenerateContent(llm.WithNode(ctx, "supervisor"), msgs, llms.WithTools(defs))
		if err != nil {
			b.Fatal(err)
		}
		call := llm.ToolCallsFrom(resp)[0]
		res := tools.Execute(ctx, call.FunctionCall.Name, json.RawMessage(call.FunctionCall.Arguments), operators.Call{ToolCallID: call.ID})
		msgs = append(msgs,
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: call.ID, Name: call.FunctionCall.Name, Content: res.Text()}}})
		if _, err := m.GenerateContent(llm.WithNode(ctx, "reflect"), msgs, llms.WithTools(defs)); err != nil {
			b.Fatal(err)
		}
		var out []byte
		resp, err = m.GenerateContent(llm.WithNode(ctx, "write"), msgs, llms.WithStreamingFunc(func(_ context.Context, c []byte) error {
			out = append(out, c...)
			return nil
		}))
		if err != nil || llm.TextFrom(resp) == "" {
			b.Fatal(err)
		}
	}
}

// BenchmarkEditOldTurn edits the turn 50 back in a conversation of 200
// turns, knowing the turn's run (as the run service does) or only its
// request: without the run the agent decodes the state before every
// later turn to find it.
func BenchmarkEditOldTurn(b *testing.B) {
	h := newHarness(b, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}, "repeat": true},
		{"match": {"node": "write"}, "reply": {"text": "a reply of a few words"}, "repeat": true}
	]}`, nodes.Options{})
	const turns, back = 200, 50
	for i := range turns {
		ctx := nodes.WithRun(b.Context(), fmt.Sprintf("run-%d", i))
		if r := collect(h.agent.Run(ctx, "c1", nodes.Input{Message: fmt.Sprintf("message %d", i), RequestID: fmt.Sprintf("req-%d", i)})); r.err != nil {
			b.Fatal(r.err)
		}
	}
	edited := turns - back
	for _, known := range []bool{true, false} {
		turn := nodes.Turn{RequestID: fmt.Sprintf("req-%d", edited)}
		name := "request"
		if known {
			turn.RunID, name = fmt.Sprintf("run-%d", edited), "run"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				// The edit forks a branch; the conversation's newest state
				// moves to it, and the next edit finds the turn as well.
				if r := collect(h.agent.Edit(b.Context(), "c1", turn, nodes.Input{Message: "edited"})); r.err != nil {
					b.Fatal(r.err)
				}
			}
		})
	}
}
