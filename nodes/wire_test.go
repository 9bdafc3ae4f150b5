package nodes_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/llm/llmtest"
	"github.com/trellis-ai/trellis/nodes"
)

// The one-tool path over OpenAI's wire protocol, through langchaingo: the
// history the agent builds (tool calls, tool results, system prompt) is
// what the API expects, tool choice is sent, and streamed tokens arrive
// as response.chunk.
func TestOneToolOverOpenAIWire(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t,
		llmtest.Response{ToolCalls: []llmtest.ToolCall{{ID: "call_a", Name: "calculator", Arguments: `{"expression":"6*7"}`}}},
		llmtest.Response{ToolCalls: []llmtest.ToolCall{{ID: "call_r", Name: "assess", Arguments: `{"assessment":"satisfied","reasoning":"done"}`}}},
		llmtest.Response{Text: "It is 42.", Chunks: []string{"It ", "is ", "42."}},
	)
	r := wireRun(t, srv.Client(), llm.ModelConfig{ID: "gpt", Provider: llm.ProviderOpenAI, BaseURL: srv.BaseURL(), Model: "gpt-test", ToolCalling: true}, func(string) string { return "" })
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:calculator tool.complete:calculator -execute_tool +reflect -reflect
		+synthesize -synthesize +write response.chunk* -write +stream response.done -stream run.completed`)
	if got := r.text(); got != "It is 42." {
		t.Errorf("chunks = %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	sup := reqs[0]
	if sup.Messages[0].Role != "system" || !strings.Contains(sup.Messages[0].Text(), "decide the next step") || !hasTool(sup.Tools, "decide") || !hasTool(sup.Tools, "calculator") {
		t.Errorf("supervisor request: %s", sup.Raw)
	}
	w := reqs[2]
	if !w.Stream || len(w.Messages) != 4 || w.Messages[2].ToolCalls[0].ID != "call_a" || w.Messages[3].Role != "tool" || w.Messages[3].ToolCallID != "call_a" || w.Messages[3].Text() != "42" {
		t.Errorf("write request: %s", w.Raw)
	}
	if !strings.Contains(string(w.Raw), `"tool_choice":"none"`) || !strings.Contains(string(reqs[1].Raw), `"name":"assess"`) {
		t.Errorf("tool choice not sent: %s / %s", w.Raw, reqs[1].Raw)
	}
	if d := last[*events.ResponseDone](r); d.Usage.InputTokens != 30 || d.Usage.OutputTokens != 15 {
		t.Errorf("usage = %+v", d.Usage)
	}
}

func hasTool(tools []map[string]any, name string) bool {
	for _, t := range tools {
		if f, ok := t["function"].(map[string]any); ok && f["name"] == name {
			return true
		}
	}
	return false
}

// A reasoning model over OpenAI's wire protocol (reasoning_content, as
// DeepSeek's API and vLLM stream it), through langchaingo: each node's
// reasoning arrives as its reasoning.chunk events, its text only as the
// answer.
func TestReasoningOverOpenAIWire(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t,
		llmtest.Response{Reasoning: []string{"Arithmetic: ", "the calculator."},
			ToolCalls: []llmtest.ToolCall{{ID: "call_a", Name: "calculator", Arguments: `{"expression":"6*7"}`}}},
		llmtest.Response{Reasoning: []string{"42 answers it."},
			ToolCalls: []llmtest.ToolCall{{ID: "call_r", Name: "assess", Arguments: `{"assessment":"satisfied","reasoning":"done"}`}}},
		llmtest.Response{Reasoning: []string{"Say ", "it plainly."}, Text: "It is 42.", Chunks: []string{"It ", "is ", "42."}},
	)
	r := wireRun(t, srv.Client(), llm.ModelConfig{ID: "reasoner", Provider: llm.ProviderOpenAI, BaseURL: srv.BaseURL(), Model: "reasoner-test", ToolCalling: true, Thinking: true}, func(string) string { return "" })
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking reasoning.chunk:supervisor* supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:calculator tool.complete:calculator -execute_tool +reflect reasoning.chunk:reflect* -reflect
		+synthesize -synthesize +write reasoning.chunk:write* response.chunk* -write +stream response.done -stream run.completed`)
	ends := map[string]string{}
	for _, e := range r.events {
		if d, ok := e.Data.(*events.NodeEnd); ok {
			ends[d.Node] = d.Reasoning
		}
	}
	if ends["supervisor"] != "Arithmetic: the calculator." || ends["reflect"] != "42 answers it." || ends["write"] != "Say it plainly." {
		t.Errorf("reasoning by node %q", ends)
	}
	if got := r.text(); got != "It is 42." {
		t.Errorf("answer = %q", got)
	}
	for i, req := range srv.Requests() {
		if !req.Stream {
			t.Errorf("request %d did not stream: the reasoning could not", i+1)
		}
	}
}

// The same path over Anthropic's Messages API, replayed byte for byte:
// the supervisor's and reflect's tool_use blocks (not streamed) become
// tool calls, the history sent back pairs each tool_use with its
// tool_result, the writer's text_delta events arrive as response.chunk,
// and usage (cache reads included) is summed.
func TestOneToolOverAnthropicWire(t *testing.T) {
	srv := llmtest.NewReplayServer(t, filepath.Join("testdata", "wire"), nil,
		llmtest.Replay{File: "anthropic_agent_supervisor.json"},
		llmtest.Replay{File: "anthropic_agent_assess.json"},
		llmtest.Replay{File: "anthropic_agent_write.sse"},
	)
	r := wireRun(t, srv.Client(), llm.ModelConfig{ID: "claude-sonnet-4-5", Provider: llm.ProviderAnthropic, BaseURL: srv.URL + "/v1", ToolCalling: true}, func(k string) string { return map[string]string{"ANTHROPIC_API_KEY": "sk-ant-wire"}[k] })
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:calculator tool.complete:calculator -execute_tool +reflect -reflect
		+synthesize -synthesize +write response.chunk* -write +stream response.done -stream run.completed`)
	if got := r.text(); got != "It is 42." {
		t.Errorf("chunks = %q", got)
	}
	if d := last[*events.ResponseDone](r); d.Usage != (events.Usage{InputTokens: 400 + 450 + 180 + 300, OutputTokens: 30 + 25 + 12, CacheReadTokens: 300, TotalTokens: 1397}) {
		t.Errorf("usage = %+v", d.Usage)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	sup := reqs[0].Body
	system, _ := sup["system"].(string)
	if reqs[0].Path != "/v1/messages" || !strings.Contains(system, "decide the next step") || !anthropicTool(sup, "decide") || !anthropicTool(sup, "calculator") {
		t.Errorf("supervisor request: path %s, system %q, tools %v", reqs[0].Path, system, sup["tools"])
	}
	w := reqs[2].Body
	var shape []string
	for _, m := range w["messages"].([]any) {
		mm := m.(map[string]any)
		for _, b := range mm["content"].([]any) {
			block := b.(map[string]any)
			s := mm["role"].(string) + ":" + block["type"].(string)
			if id, ok := block["id"].(string); ok {
				s += ":" + id
			}
			if id, ok := block["tool_use_id"].(string); ok {
				s += ":" + id + "=" + block["content"].(string)
			}
			shape = append(shape, s)
		}
	}
	if w["stream"] != true || strings.Join(shape, " ") != "user:text assistant:tool_use:toolu_01AgentCalc user:tool_result:toolu_01AgentCalc=42" {
		t.Errorf("write request: stream %v, messages %s", w["stream"], strings.Join(shape, " "))
	}
}

func anthropicTool(body map[string]any, name string) bool {
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		if m, ok := t.(map[string]any); ok && m["name"] == name {
			return true
		}
	}
	return false
}

// wireRun asks the agent "what is 6*7?" over model, the only one, whose
// provider client is client (a test server's), with no retries, and
// returns the run.
func wireRun(t *testing.T, client *http.Client, model llm.ModelConfig, getenv func(string) string) run {
	t.Helper()
	reg, err := llm.NewRegistry(llm.Config{Models: []llm.ModelConfig{model}, HTTPClient: client,
		Resilience: llm.ResilienceConfig{MaxAttempts: 1}, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := testTools(t)
	a, err := nodes.New(reg, tools, nil, nodes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := collect(a.Run(t.Context(), "w1", nodes.Input{Message: "what is 6*7?"}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r
}
