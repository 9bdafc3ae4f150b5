package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/llm"
)

// TestContextReachesTheAgent: the context a client sends reaches the
// prompts of the run it starts, fenced as the client's data, from every
// surface that carries one: the native chat and sync chat ("context"),
// the OpenAI adapter (its system messages), AG-UI (its context list)
// and LangGraph's runs (their context).
func TestContextReachesTheAgent(t *testing.T) {
	sc, err := llm.ParseScript([]byte(`{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER", "reasoning": "known"}}, "repeat": true},
		{"match": {"node": "write"}, "reply": {"text": "Noted."}, "repeat": true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	model := llm.NewScripted(sc)
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) {
		reg, err := llm.NewRegistry(llm.Config{Models: []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: model,
			ToolCalling: true}}, Resilience: llm.ResilienceConfig{Disabled: true}})
		if err != nil {
			t.Fatal(err)
		}
		c.Runs.Models = reg
	}})
	status, body := e.do(http.MethodPost, "/langgraph/threads", map[string]any{})
	if status != http.StatusOK {
		t.Fatalf("create thread: %d %s", status, body)
	}
	thread := jsonOf[struct {
		ThreadID string `json:"thread_id"`
	}](t, body).ThreadID
	agui := aguiInput("ctx-thread", "from ag-ui")
	agui["context"] = []map[string]any{{"description": "the page", "value": "/checkout"}}
	for _, tc := range []struct {
		name, path, message, want string
		body                      any
	}{
		{"chat", "/api/v1/chat", "from chat", `{"page":"/cart"}`,
			map[string]any{"message": "from chat", "context": map[string]any{"page": "/cart"}}},
		{"chat/sync", "/api/v1/chat/sync", "from sync", `{"page":"/sync"}`,
			map[string]any{"message": "from sync", "context": map[string]any{"page": "/sync"}}},
		{"openai", "/v1/chat/completions", "from openai", `{"instructions":["Answer in French."]}`,
			map[string]any{"model": "scripted", "messages": []map[string]any{
				{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "from openai"}}}},
		{"ag-ui", "/ag-ui", "from ag-ui", `{"context":[{"description":"the page","value":"/checkout"}]}`, agui},
		{"langgraph", "/langgraph/threads/" + thread + "/runs/wait", "from langgraph", `{"tenant":"acme"}`,
			map[string]any{"assistant_id": "agent", "context": map[string]any{"tenant": "acme"},
				"input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "from langgraph"}}}}},
	} {
		if status, body := e.do(http.MethodPost, tc.path, tc.body); status != http.StatusOK {
			t.Fatalf("%s: %d %.300s", tc.name, status, body)
		}
		n := 0
		for _, c := range model.Calls() {
			if c.LastHuman != tc.message {
				continue
			}
			n++
			if !strings.Contains(c.System, "<client_context>\n"+tc.want+"\n</client_context>") {
				t.Errorf("%s: the %s prompt does not hold %s fenced:\n%s", tc.name, c.Node, tc.want, c.System)
			}
		}
		if n == 0 {
			t.Errorf("%s: no model call answered %q", tc.name, tc.message)
		}
	}
}
