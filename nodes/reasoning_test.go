package nodes_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// reasoningScript thinks in the supervisor, reflect and write.
const reasoningScript = `{"steps": [
	{"match": {"node": "supervisor", "tool_result": false}, "reply": {"thinking": "The user wants arithmetic; the calculator does it.",
		"tool_calls": [{"id": "c1", "name": "calculator", "args": {"expression": "6*7"}}]}},
	{"match": {"node": "reflect"}, "reply": {"thinking": "42 answers it.", "json": {"assessment": "satisfied", "reasoning": "done"}}},
	{"match": {"node": "write"}, "reply": {"thinking": "Say it plainly.", "text": "It is 42."}}
]}`

// reasoningAgent runs script on a scripted model whose config says whether
// it thinks.
func reasoningAgent(t *testing.T, script string, thinking bool) (*nodes.Agent, *llm.Scripted) {
	t.Helper()
	sc, err := llm.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	model := llm.NewScripted(sc)
	reg, err := llm.NewRegistry(llm.Config{
		Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: model, ToolCalling: true, Thinking: thinking}},
		Resilience: llm.ResilienceConfig{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := testTools(t)
	a, err := nodes.New(reg, tools, memory.New(), nodes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a, model
}

// A thinking model's reasoning streams as reasoning.chunk events of the
// node that called it, before that node's other output, and each node's
// whole reasoning comes back on its node.end.
func TestReasoningStreamsPerNode(t *testing.T) {
	a, model := reasoningAgent(t, reasoningScript, true)
	r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "what is 6*7?"}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking reasoning.chunk:supervisor* supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:calculator tool.complete:calculator -execute_tool
		+reflect reasoning.chunk:reflect* -reflect +synthesize -synthesize
		+write reasoning.chunk:write* response.chunk* -write +stream response.done -stream run.completed`)
	streamed := map[string]*strings.Builder{}
	ends := map[string]string{}
	for _, e := range r.events {
		switch d := e.Data.(type) {
		case *events.ReasoningChunk:
			if streamed[d.Node] == nil {
				streamed[d.Node] = &strings.Builder{}
			}
			streamed[d.Node].WriteString(d.Content)
		case *events.NodeEnd:
			ends[d.Node] = d.Reasoning
		}
	}
	want := map[string]string{
		"supervisor": "The user wants arithmetic; the calculator does it.",
		"reflect":    "42 answers it.",
		"write":      "Say it plainly.",
	}
	for node, w := range want {
		if streamed[node] == nil || streamed[node].String() != w {
			t.Errorf("%s streamed %v, want %q", node, streamed[node], w)
		}
		if ends[node] != w {
			t.Errorf("%s node.end reasoning = %q, want %q", node, ends[node], w)
		}
	}
	for _, node := range []string{"initialize", "execute_tool", "synthesize", "stream"} {
		if ends[node] != "" {
			t.Errorf("%s node.end reasoning = %q, want none", node, ends[node])
		}
	}
	if got := r.text(); got != "It is 42." {
		t.Errorf("answer = %q: the reasoning leaked into it or was lost", got)
	}
	if left := model.Unconsumed(); len(left) > 0 {
		t.Errorf("script steps never used: %v", left)
	}
}

// A model not configured to think gets no reasoning func: whatever its
// replies carry, the run shows no reasoning.
func TestNoReasoningFromAModelThatDoesNotThink(t *testing.T) {
	a, _ := reasoningAgent(t, reasoningScript, false)
	r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "what is 6*7?"}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, e := range r.events {
		if d, ok := e.Data.(*events.NodeEnd); e.Type == events.TypeReasoningChunk || ok && d.Reasoning != "" {
			t.Errorf("reasoning from a model that does not think: %s %+v", e.Type, e.Data)
		}
	}
	if got := r.text(); got != "It is 42." {
		t.Errorf("answer = %q", got)
	}
}

// The offline model thinks when its config says so, so reasoning can be
// seen with no key.
func TestOfflineModelReasons(t *testing.T) {
	cfg := llm.OfflineConfig()
	cfg.Thinking = true
	reg, err := llm.NewRegistry(llm.Config{Models: []llm.ModelConfig{cfg}})
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := testTools(t)
	a, err := nodes.New(reg, tools, memory.New(), nodes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "what is 2+2?"}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	ends := map[string]string{}
	for _, e := range r.events {
		if d, ok := e.Data.(*events.NodeEnd); ok {
			ends[d.Node] = d.Reasoning
		}
	}
	if want := `A rule of mine covers this message, so I call calculator {"expression":"2+2"}.`; ends["supervisor"] != want {
		t.Errorf("supervisor reasoning %q, want %q", ends["supervisor"], want)
	}
	if ends["write"] == "" || !strings.Contains(r.trace(), "reasoning.chunk:write*") {
		t.Errorf("write did not reason: %q; %s", ends["write"], r.trace())
	}
	if !strings.Contains(r.text(), "4") {
		t.Errorf("answer %q", r.text())
	}
}

// A run cancelled while its model thinks stops at once: the reasoning
// stops, no node.end claims it, and the run ends cancelled (TestMain
// checks that no goroutine outlives it).
func TestCancelWhileReasoning(t *testing.T) {
	a, _ := reasoningAgent(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"thinking": "one two three four five six seven eight", "json": {"action": "ANSWER"}, "delay_ms": 200}}
	]}`, true)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var r run
	for ev, err := range a.Run(ctx, "c1", nodes.Input{Message: "hi"}) {
		r.events = append(r.events, ev)
		if err != nil {
			r.err = err
		}
		if ev.Type == events.TypeReasoningChunk {
			cancel()
		}
	}
	if !errors.Is(r.err, context.Canceled) || !strings.HasSuffix(r.trace(), "supervisor.thinking reasoning.chunk:supervisor* run.cancelled") {
		t.Fatalf("run: %s, %v", r.trace(), r.err)
	}
	var got string
	for _, e := range r.events {
		if c, ok := e.Data.(*events.ReasoningChunk); ok {
			got += c.Content
		}
	}
	if got == "one two three four five six seven eight" {
		t.Errorf("the reasoning went on to its end after the cancel: %q", got)
	}
}
