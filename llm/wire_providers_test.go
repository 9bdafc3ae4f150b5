package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/llm/llmtest"
)

// The tests in this file replay, byte for byte, streams and error bodies
// written after each provider's published documentation and examples
// (testdata/wire): Anthropic's Messages streaming events, OpenAI's chat
// completion chunks, and Ollama's OpenAI-compatible /v1 chunks (the shape
// of ollama/openai's ToChunk). They go through the real langchaingo
// clients as NewProvider configures them, under the registry's
// resilience, as the agent's nodes call a model.

// anthropicRules refuses what Anthropic documents it refuses: with
// thinking on, the last assistant turn of a tool loop must start with
// its (signed) thinking block.
func anthropicRules(body map[string]any) *llmtest.Replay {
	th, _ := body["thinking"].(map[string]any)
	if th == nil || th["type"] != "enabled" {
		return nil
	}
	msgs, _ := body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] != "assistant" {
			continue
		}
		blocks, _ := m["content"].([]any)
		first, _ := blocks[0].(map[string]any)
		if first["type"] != "thinking" && first["type"] != "redacted_thinking" {
			return &llmtest.Replay{Status: 400, File: "anthropic_thinking_required.json"}
		}
		return nil
	}
	return nil
}

// openAIRules refuses a temperature other than 1 for o-series reasoning
// models, as OpenAI does.
func openAIRules(body map[string]any) *llmtest.Replay {
	model, _ := body["model"].(string)
	if t, ok := body["temperature"].(float64); ok && t != 1 && len(model) > 1 && model[0] == 'o' && model[1] >= '1' && model[1] <= '9' {
		return &llmtest.Replay{Status: 400, File: "openai_temperature_unsupported.json"}
	}
	return nil
}

func newReplayServer(t *testing.T, check func(map[string]any) *llmtest.Replay, replies ...llmtest.Replay) *llmtest.ReplayServer {
	t.Helper()
	return llmtest.NewReplayServer(t, filepath.Join("testdata", "wire"), check, replies...)
}

var wireTools = []llms.Tool{
	{Type: "function", Function: &llms.FunctionDefinition{Name: "calculator", Description: "evaluates arithmetic",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"expression": map[string]any{"type": "string"}}, "required": []any{"expression"}}}},
	{Type: "function", Function: &llms.FunctionDefinition{Name: "current_time", Description: "the time in a timezone",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"timezone": map[string]any{"type": "string"}}}}},
}

func providerModel(t *testing.T, cfg llm.ModelConfig, srv *llmtest.ReplayServer, env map[string]string, res llm.ResilienceConfig) llms.Model {
	t.Helper()
	r, err := llm.NewRegistry(llm.Config{Models: []llm.ModelConfig{cfg}, HTTPClient: srv.Client(), Resilience: res, Getenv: envMap(env)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Model(t.Context(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// roundResult is what an agent-like loop over a model saw.
type roundResult struct {
	answer    string
	streamed  string // user-facing text, as TextStream passes it
	reasoning string // from the streaming reasoning func
	thinking  string // from the responses (ThinkingFrom)
	usage     events.Usage
	calls     []llms.ToolCall
}

// toolRound runs the model as the agent does: call with tools, run the
// tools it asks for, send the results back, until it answers.
func toolRound(t *testing.T, m llms.Model, cfg llm.ModelConfig) roundResult {
	t.Helper()
	tools := map[string]string{"calculator": "8", "current_time": "10:00 Asia/Tokyo"}
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are Trellis."),
		human("what is 2+2*3, and what time is it in Tokyo?"),
	}
	var out roundResult
	var streamed, reasoning strings.Builder
	opts := []llms.CallOption{
		llms.WithTools(wireTools),
		llms.WithStreamingFunc(llm.TextStream(func(_ context.Context, c []byte) error { streamed.Write(c); return nil })),
		llms.WithStreamingReasoningFunc(func(_ context.Context, r, _ []byte) error { reasoning.Write(r); return nil }),
	}
	opts = append(opts, llm.ThinkingOptions(cfg, 0)...)
	for turn := 0; turn < 3; turn++ {
		resp, err := m.GenerateContent(t.Context(), msgs, opts...)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		out.usage = out.usage.Add(llm.UsageFrom(resp))
		out.thinking += llm.ThinkingFrom(resp)
		calls := llm.ToolCallsFrom(resp)
		if len(calls) == 0 {
			out.answer = llm.TextFrom(resp)
			break
		}
		out.calls = append(out.calls, calls...)
		ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
		if text := llm.TextFrom(resp); text != "" {
			ai.Parts = append(ai.Parts, llms.TextContent{Text: text})
		}
		for _, c := range calls {
			ai.Parts = append(ai.Parts, c)
		}
		msgs = append(msgs, ai)
		for _, c := range calls {
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: c.ID, Name: c.FunctionCall.Name, Content: tools[c.FunctionCall.Name]},
			}})
		}
	}
	out.streamed, out.reasoning = streamed.String(), reasoning.String()
	return out
}

func checkCalls(t *testing.T, calls []llms.ToolCall, ids ...string) {
	t.Helper()
	want := []struct{ name, args string }{{"calculator", `{"expression":"2+2*3"}`}, {"current_time", `{"timezone":"Asia/Tokyo"}`}}
	if len(calls) != len(want) {
		t.Fatalf("tool calls = %+v, want calculator and current_time", calls)
	}
	for i, c := range calls {
		var got, w any
		_ = json.Unmarshal([]byte(c.FunctionCall.Arguments), &got)
		_ = json.Unmarshal([]byte(want[i].args), &w)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(w)
		if c.ID != ids[i] || c.Type != "function" || c.FunctionCall.Name != want[i].name || string(gb) != string(wb) {
			t.Errorf("tool call %d = %s %s %s(%s); want %s %s(%s)", i, c.ID, c.Type, c.FunctionCall.Name, c.FunctionCall.Arguments, ids[i], want[i].name, want[i].args)
		}
	}
}

const wireAnswer = "2+2*3 = 8, and it is 10:00 in Tokyo."

// Anthropic, with extended thinking: thinking and text stream, two tool
// calls come back whole, the results go back, the answer streams, and the
// usage of both calls is counted (cache reads included in input).
func TestWireAnthropicToolRound(t *testing.T) {
	srv := newReplayServer(t, anthropicRules,
		llmtest.Replay{File: "anthropic_tool_use.sse"}, llmtest.Replay{File: "anthropic_answer.sse"})
	cfg := llm.ModelConfig{ID: "claude-sonnet-4-5", Provider: llm.ProviderAnthropic, BaseURL: srv.URL + "/v1",
		ToolCalling: true, Thinking: true, MaxTokens: 8192}
	m := providerModel(t, cfg, srv, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-wire"}, llm.ResilienceConfig{MaxAttempts: 1})
	got := toolRound(t, m, cfg)

	if got.answer != wireAnswer {
		t.Errorf("answer = %q", got.answer)
	}
	if want := "Let me work that out and check the clock." + wireAnswer; got.streamed != want {
		t.Errorf("streamed text = %q, want %q", got.streamed, want)
	}
	const thought = "The user asks for arithmetic and the time in Tokyo. Both need a tool."
	if got.reasoning != thought || got.thinking != thought {
		t.Errorf("reasoning streamed %q, in the response %q; want %q", got.reasoning, got.thinking, thought)
	}
	checkCalls(t, got.calls, "toolu_01WireCalc", "toolu_01WireTime")
	if want := (events.Usage{InputTokens: 472 + 610, OutputTokens: 89 + 21, CacheReadTokens: 400, TotalTokens: 1192}); got.usage != want {
		t.Errorf("usage = %+v, want %+v", got.usage, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first, second := reqs[0], reqs[1]
	if first.Path != "/v1/messages" || first.Header.Get("x-api-key") != "sk-ant-wire" || first.Header.Get("anthropic-version") == "" {
		t.Errorf("first request: path %s, headers %v", first.Path, first.Header)
	}
	th, _ := first.Body["thinking"].(map[string]any)
	if first.Body["stream"] != true || th["type"] != "enabled" || th["budget_tokens"] != float64(llm.DefaultThinkingBudget) ||
		first.Body["temperature"] != 1.0 || first.Body["max_tokens"].(float64) <= float64(llm.DefaultThinkingBudget) {
		t.Errorf("first request: stream %v thinking %v temperature %v max_tokens %v", first.Body["stream"], th, first.Body["temperature"], first.Body["max_tokens"])
	}
	// langchaingo cannot send the signed thinking block back, so the
	// continuation of the tool loop goes without thinking, which Anthropic
	// allows (anthropicRules would refuse it otherwise).
	if second.Body["thinking"] != nil {
		t.Errorf("second request has thinking %v", second.Body["thinking"])
	}
	var shape []string
	for _, msg := range second.Body["messages"].([]any) {
		mm := msg.(map[string]any)
		for _, b := range mm["content"].([]any) {
			block := b.(map[string]any)
			s := mm["role"].(string) + ":" + block["type"].(string)
			if id, ok := block["tool_use_id"].(string); ok {
				s += ":" + id + "=" + block["content"].(string)
			}
			shape = append(shape, s)
		}
	}
	want := "user:text assistant:text assistant:tool_use user:tool_result:toolu_01WireCalc=8 assistant:tool_use user:tool_result:toolu_01WireTime=10:00 Asia/Tokyo"
	if strings.Join(shape, " ") != want {
		t.Errorf("history sent back:\n got %s\nwant %s", strings.Join(shape, " "), want)
	}
}

// OpenAI: parallel tool calls whose arguments stream in pieces, the
// usage chunk of stream_options.include_usage, cached prompt tokens.
func TestWireOpenAIToolRound(t *testing.T) {
	srv := newReplayServer(t, openAIRules, llmtest.Replay{File: "openai_tool_calls.sse"}, llmtest.Replay{File: "openai_answer.sse"})
	cfg := llm.ModelConfig{ID: "gpt-4.1", Provider: llm.ProviderOpenAI, BaseURL: srv.URL + "/v1", ToolCalling: true}
	m := providerModel(t, cfg, srv, map[string]string{"OPENAI_API_KEY": "sk-wire"}, llm.ResilienceConfig{MaxAttempts: 1})
	got := toolRound(t, m, cfg)
	if got.answer != wireAnswer || got.streamed != wireAnswer || got.reasoning != "" {
		t.Errorf("answer %q, streamed %q, reasoning %q", got.answer, got.streamed, got.reasoning)
	}
	checkCalls(t, got.calls, "call_WireCalc", "call_WireTime")
	if want := (events.Usage{InputTokens: 96 + 180, OutputTokens: 52 + 17, CacheReadTokens: 128, TotalTokens: 345}); got.usage != want {
		t.Errorf("usage = %+v, want %+v", got.usage, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/v1/chat/completions" || reqs[0].Header.Get("Authorization") != "Bearer sk-wire" {
		t.Fatalf("requests: %+v", reqs)
	}
	so, _ := reqs[0].Body["stream_options"].(map[string]any)
	if reqs[0].Body["stream"] != true || so["include_usage"] != true || reqs[0].Body["model"] != "gpt-4.1" {
		t.Errorf("first request: stream %v options %v model %v", reqs[0].Body["stream"], so, reqs[0].Body["model"])
	}
	var roles []string
	for _, msg := range reqs[1].Body["messages"].([]any) {
		mm := msg.(map[string]any)
		s := mm["role"].(string)
		if id, ok := mm["tool_call_id"].(string); ok {
			s += ":" + id
		}
		roles = append(roles, s)
	}
	if want := "system user assistant tool:call_WireCalc tool:call_WireTime"; strings.Join(roles, " ") != want {
		t.Errorf("history sent back: %s, want %s", strings.Join(roles, " "), want)
	}
}

// OpenAI's o-series reason without showing it: only reasoning_tokens in
// the usage, counted as thinking, not output. They accept no temperature
// but 1.
func TestWireOpenAIReasoningModel(t *testing.T) {
	srv := newReplayServer(t, openAIRules, llmtest.Replay{File: "openai_reasoning.sse"})
	cfg := llm.ModelConfig{ID: "o4-mini", Provider: llm.ProviderOpenAI, BaseURL: srv.URL + "/v1", ToolCalling: true, Thinking: true}
	m := providerModel(t, cfg, srv, map[string]string{"OPENAI_API_KEY": "sk-wire"}, llm.ResilienceConfig{MaxAttempts: 1})
	var reasoning strings.Builder
	opts := append([]llms.CallOption{
		llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }),
		llms.WithStreamingReasoningFunc(func(_ context.Context, r, _ []byte) error { reasoning.Write(r); return nil }),
	}, llm.ThinkingOptions(cfg, 0)...)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("what is 2+2*3?")}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if llm.TextFrom(resp) != "Eight." || reasoning.Len() != 0 || llm.ThinkingFrom(resp) != "" {
		t.Errorf("text %q, reasoning %q / %q", llm.TextFrom(resp), reasoning.String(), llm.ThinkingFrom(resp))
	}
	if u := llm.UsageFrom(resp); u != (events.Usage{InputTokens: 40, OutputTokens: 20, ThinkingTokens: 192, TotalTokens: 252}) {
		t.Errorf("usage = %+v", u)
	}
}

// Ollama's /v1: each tool call whole in one chunk, reasoning in the
// "reasoning" field, which langchaingo v0.1.14 does not read (it reads
// only DeepSeek's "reasoning_content"): no reasoning reaches the caller.
func TestWireOllamaToolRound(t *testing.T) {
	srv := newReplayServer(t, nil, llmtest.Replay{File: "ollama_tool_calls.sse"}, llmtest.Replay{File: "ollama_answer.sse"})
	cfg := llm.ModelConfig{ID: "ollama/qwen3:8b", Model: "qwen3:8b", Provider: llm.ProviderOpenAI, BaseURL: srv.URL + "/v1",
		ToolCalling: true, LegacyMaxTokens: true, MaxTokens: 2048}
	m := providerModel(t, cfg, srv, nil, llm.ResilienceConfig{MaxAttempts: 1})
	got := toolRound(t, m, cfg)
	if got.answer != wireAnswer || got.streamed != wireAnswer {
		t.Errorf("answer %q, streamed %q", got.answer, got.streamed)
	}
	if got.reasoning != "" || got.thinking != "" {
		t.Errorf("reasoning %q / %q: langchaingo now reads Ollama's reasoning field; document and use it", got.reasoning, got.thinking)
	}
	checkCalls(t, got.calls, "call_k2x9q1ab", "call_m7w3z0cd")
	if want := (events.Usage{InputTokens: 233 + 301, OutputTokens: 61 + 14, TotalTokens: 609}); got.usage != want {
		t.Errorf("usage = %+v, want %+v", got.usage, want)
	}
	first := srv.Requests()[0]
	if first.Body["model"] != "qwen3:8b" || first.Body["max_tokens"] != 2048.0 || first.Body["max_completion_tokens"] != nil {
		t.Errorf("first request: model %v max_tokens %v max_completion_tokens %v", first.Body["model"], first.Body["max_tokens"], first.Body["max_completion_tokens"])
	}
}

// Each provider's documented error shapes come back classified: kind,
// status and Retry-After, so retry, breaker and fallback act on them.
func TestWireProviderErrors(t *testing.T) {
	anthropic := llm.ModelConfig{ID: "claude-sonnet-4-5", Provider: llm.ProviderAnthropic}
	openai := llm.ModelConfig{ID: "gpt-4.1", Provider: llm.ProviderOpenAI}
	ollama := llm.ModelConfig{ID: "qwen3:8b", Provider: llm.ProviderOpenAI}
	for _, tc := range []struct {
		name       string
		cfg        llm.ModelConfig
		reply      llmtest.Replay
		kind       llm.Kind
		status     int
		retryAfter time.Duration
		says       string
	}{
		{"anthropic 429", anthropic, llmtest.Replay{Status: 429, File: "anthropic_429.json", Header: map[string]string{"retry-after": "7", "anthropic-ratelimit-input-tokens-remaining": "0"}},
			llm.KindRateLimited, 429, 7 * time.Second, "exceed the rate limit"},
		{"anthropic 529 overloaded", anthropic, llmtest.Replay{Status: 529, File: "anthropic_529.json"}, llm.KindTransient, 529, 0, "Overloaded"},
		{"anthropic context length", anthropic, llmtest.Replay{Status: 400, File: "anthropic_context_length.json"}, llm.KindPermanent, 400, 0, "prompt is too long"},
		{"anthropic overloaded mid-stream", anthropic, llmtest.Replay{File: "anthropic_overloaded_midstream.sse"}, llm.KindTransient, 0, 0, "overloaded_error"},
		{"openai 429", openai, llmtest.Replay{Status: 429, File: "openai_429.json", Header: map[string]string{"retry-after": "3", "retry-after-ms": "2560", "x-ratelimit-reset-tokens": "2.56s"}},
			llm.KindRateLimited, 429, 2560 * time.Millisecond, "Rate limit reached"},
		{"openai context length", openai, llmtest.Replay{Status: 400, File: "openai_context_length.json"}, llm.KindPermanent, 400, 0, "maximum context length"},
		{"openai error mid-stream", openai, llmtest.Replay{File: "openai_error_midstream.sse"}, llm.KindTransient, 0, 0, "stream ended"},
		{"ollama model not found", ollama, llmtest.Replay{Status: 404, File: "ollama_not_found.json"}, llm.KindPermanent, 404, 0, "try pulling it first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newReplayServer(t, nil, tc.reply)
			cfg := tc.cfg
			cfg.BaseURL = srv.URL + "/v1"
			m := providerModel(t, cfg, srv, map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, llm.ResilienceConfig{MaxAttempts: 1})
			var streamed strings.Builder
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")},
				llms.WithStreamingFunc(llm.TextStream(func(_ context.Context, c []byte) error { streamed.Write(c); return nil })))
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (response %+v), want an *llm.Error", err, resp)
			}
			if e.Kind != tc.kind || e.StatusCode != tc.status || e.RetryAfter != tc.retryAfter || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %v: kind %s status %d retry after %s; want %s %d %s saying %q", err, e.Kind, e.StatusCode, e.RetryAfter, tc.kind, tc.status, tc.retryAfter, tc.says)
			}
		})
	}
}

// An overloaded_error in the stream before any text is retried, and the
// retry's answer is the only one the caller sees.
func TestWireAnthropicOverloadedStreamIsRetried(t *testing.T) {
	srv := newReplayServer(t, nil, llmtest.Replay{File: "anthropic_overloaded_midstream.sse"}, llmtest.Replay{File: "anthropic_answer.sse"})
	cfg := llm.ModelConfig{ID: "claude-sonnet-4-5", Provider: llm.ProviderAnthropic, BaseURL: srv.URL + "/v1"}
	m := providerModel(t, cfg, srv, map[string]string{"ANTHROPIC_API_KEY": "k"},
		llm.ResilienceConfig{MaxAttempts: 2, BackoffBase: time.Millisecond, JitterFactor: -1})
	var streamed strings.Builder
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")},
		llms.WithStreamingFunc(func(_ context.Context, c []byte) error { streamed.Write(c); return nil }))
	if err != nil || llm.TextFrom(resp) != wireAnswer || streamed.String() != wireAnswer || len(srv.Requests()) != 2 {
		t.Fatalf("err %v, text %q, streamed %q, %d requests", err, llm.TextFrom(resp), streamed.String(), len(srv.Requests()))
	}
}

// OpenAI-compatible servers that stream reasoning text in
// "reasoning_content" (DeepSeek, vLLM's reasoning parsers) reach the
// streaming reasoning func and the response.
func TestWireOpenAICompatibleReasoningContent(t *testing.T) {
	srv := newReplayServer(t, nil, llmtest.Replay{File: "openai_compatible_reasoning_content.sse"})
	cfg := llm.ModelConfig{ID: "deepseek-reasoner", Provider: llm.ProviderOpenAI, BaseURL: srv.URL + "/v1", Thinking: true}
	m := providerModel(t, cfg, srv, nil, llm.ResilienceConfig{MaxAttempts: 1})
	var text, reasoning strings.Builder
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("what is 2+2*3?")},
		llms.WithStreamingFunc(llm.TextStream(func(_ context.Context, c []byte) error { text.Write(c); return nil })),
		llms.WithStreamingReasoningFunc(func(_ context.Context, r, _ []byte) error { reasoning.Write(r); return nil }))
	if err != nil {
		t.Fatal(err)
	}
	const thought = "2*3 is 6, plus 2 is 8."
	if text.String() != "It is 8." || llm.TextFrom(resp) != "It is 8." || reasoning.String() != thought || llm.ThinkingFrom(resp) != thought {
		t.Errorf("text %q / %q, reasoning %q / %q", text.String(), llm.TextFrom(resp), reasoning.String(), llm.ThinkingFrom(resp))
	}
	if u := llm.UsageFrom(resp); u != (events.Usage{InputTokens: 14, OutputTokens: 8, ThinkingTokens: 22, TotalTokens: 44}) {
		t.Errorf("usage = %+v", u)
	}
}

// A call that streams only reasoning still streams: langchaingo's
// Anthropic client parses a stream only when a text func is set.
func TestWireAnthropicReasoningOnlyStream(t *testing.T) {
	srv := newReplayServer(t, nil, llmtest.Replay{File: "anthropic_tool_use.sse"})
	cfg := llm.ModelConfig{ID: "claude-sonnet-4-5", Provider: llm.ProviderAnthropic, BaseURL: srv.URL + "/v1", Thinking: true}
	m := providerModel(t, cfg, srv, map[string]string{"ANTHROPIC_API_KEY": "k"}, llm.ResilienceConfig{MaxAttempts: 1})
	var reasoning strings.Builder
	opts := append([]llms.CallOption{llms.WithTools(wireTools),
		llms.WithStreamingReasoningFunc(func(_ context.Context, r, _ []byte) error { reasoning.Write(r); return nil })},
		llm.ThinkingOptions(cfg, 0)...)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("what is 2+2*3?")}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	const thought = "The user asks for arithmetic and the time in Tokyo. Both need a tool."
	if reasoning.String() != thought || len(llm.ToolCallsFrom(resp)) != 2 {
		t.Errorf("reasoning %q, calls %+v", reasoning.String(), llm.ToolCallsFrom(resp))
	}
}

// Fallback over the wire: Anthropic overloaded (before any text, after
// its retries) falls back to OpenAI, whose answer and usage are the
// call's. Overloaded after text reached the user, it does not: the user
// keeps the text and the call fails, nothing said twice.
func TestWireFallbackFromAnthropicToOpenAI(t *testing.T) {
	ant := newReplayServer(t, nil,
		llmtest.Replay{File: "anthropic_overloaded_midstream.sse"}, llmtest.Replay{Status: 529, File: "anthropic_529.json"},
		llmtest.Replay{File: "anthropic_overloaded_after_text.sse"})
	oai := newReplayServer(t, nil, llmtest.Replay{File: "openai_answer.sse"})
	// One client for both servers: httptest clients trust any test server.
	r, err := llm.NewRegistry(llm.Config{
		Models: []llm.ModelConfig{
			{ID: "claude-sonnet-4-5", Provider: llm.ProviderAnthropic, BaseURL: ant.URL + "/v1", Fallbacks: []string{"gpt"}},
			{ID: "gpt-4.1", Provider: llm.ProviderOpenAI, BaseURL: oai.URL + "/v1", Aliases: []string{"gpt"}},
		},
		HTTPClient: ant.Client(),
		Resilience: llm.ResilienceConfig{MaxAttempts: 2, BackoffBase: time.Millisecond, JitterFactor: -1, FailureThreshold: 5},
		Getenv:     envMap(map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Model(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var rec fallbackRecorder
	var streamed strings.Builder
	stream := llms.WithStreamingFunc(llm.TextStream(func(_ context.Context, c []byte) error { streamed.Write(c); return nil }))

	resp, err := m.GenerateContent(rec.ctx(t.Context()), []llms.MessageContent{human("hi")}, stream)
	if err != nil || llm.TextFrom(resp) != wireAnswer || streamed.String() != wireAnswer {
		t.Fatalf("err %v, text %q, streamed %q", err, llm.TextFrom(resp), streamed.String())
	}
	if n := len(ant.Requests()); n != 2 {
		t.Errorf("%d Anthropic requests, want its 2 attempts before the fallback", n)
	}
	if ev := rec.events(); len(ev) != 1 || ev[0] != (events.ModelFallback{From: "claude-sonnet-4-5", To: "gpt-4.1", Reason: events.FallbackUnavailable}) {
		t.Errorf("fallbacks = %+v", ev)
	}
	if u := llm.UsageFrom(resp); u != (events.Usage{InputTokens: 180, OutputTokens: 17, CacheReadTokens: 128, TotalTokens: 197}) {
		t.Errorf("usage = %+v, want OpenAI's", u)
	}

	streamed.Reset()
	_, err = m.GenerateContent(rec.ctx(t.Context()), []llms.MessageContent{human("hi")}, stream)
	if err == nil || llm.KindOf(err) != llm.KindTransient || streamed.String() != "2+2*3 = 8, and it is" {
		t.Errorf("cut after text: err %v, streamed %q; want the error and only what was sent", err, streamed.String())
	}
	if len(ant.Requests()) != 3 || len(oai.Requests()) != 1 || len(rec.events()) != 1 {
		t.Errorf("after the cut: %d Anthropic, %d OpenAI requests, fallbacks %+v; want no retry, no fallback",
			len(ant.Requests()), len(oai.Requests()), rec.events())
	}
}

// langchaingo's Anthropic client stops at an error event and closes the
// body while its reader goroutine is still reading: the goroutine must
// end, not block forever (the server here holds the stream open, so the
// close always comes first).
func TestWireAnthropicErrorEventLeavesNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	srv := newReplayServer(t, nil, llmtest.Replay{File: "anthropic_overloaded_midstream.sse", Hold: true})
	cfg := llm.ModelConfig{ID: "claude-sonnet-4-5", Provider: llm.ProviderAnthropic, BaseURL: srv.URL + "/v1"}
	m := providerModel(t, cfg, srv, map[string]string{"ANTHROPIC_API_KEY": "k"}, llm.ResilienceConfig{MaxAttempts: 1})
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")},
		llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	if llm.KindOf(err) != llm.KindTransient {
		t.Fatalf("err = %v", err)
	}
	srv.Close()
	srv.Client().CloseIdleConnections()
	goleak.VerifyNone(t, before)
}
