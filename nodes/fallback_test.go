package nodes_test

import (
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// A run whose model is down moves each call to the model's fallback, and
// says so in its events: model.fallback before the node's output.
func TestModelFallbackIsARunEvent(t *testing.T) {
	sc, err := llm.ParseScript([]byte(`{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER", "reasoning": "small talk"}}},
		{"match": {"node": "write"}, "reply": {"text": "Hello from the backup."}}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := llm.NewRegistry(llm.Config{
		Models: []llm.ModelConfig{
			// Nothing listens on port 1: every call fails before reaching a server.
			{ID: "down", Provider: llm.ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1", ToolCalling: true, Fallbacks: []string{"backup"}},
			{ID: "backup", Provider: llm.ProviderScripted, Instance: llm.NewScripted(sc), ToolCalling: true},
		},
		Resilience: llm.ResilienceConfig{MaxAttempts: 1},
		Getenv:     func(string) string { return "" },
	})
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := testTools(t)
	agent, err := nodes.New(reg, tools, memory.New(), nodes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := collect(agent.Run(t.Context(), "c1", nodes.Input{Message: "hi", RequestID: "r1"}))
	if r.err != nil || r.text() != "Hello from the backup." {
		t.Fatalf("run: %v, answer %q, events %s", r.err, r.text(), r.trace())
	}
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking model.fallback supervisor.decided:answer -supervisor
		+write model.fallback response.chunk* -write +stream response.done -stream run.completed`)
	f := last[*events.ModelFallback](r)
	if f == nil || *f != (events.ModelFallback{From: "down", To: "backup", Reason: events.FallbackUnavailable}) {
		t.Errorf("model.fallback = %+v", f)
	}
}
