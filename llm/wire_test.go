package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/llm/llmtest"
)

func wireModel(t *testing.T, srv *llmtest.OpenAIServer, res llm.ResilienceConfig) llms.Model {
	t.Helper()
	r, err := llm.NewRegistry(llm.Config{
		Models:     []llm.ModelConfig{{ID: "wire", Model: "served-model", Provider: llm.ProviderOpenAI, BaseURL: srv.BaseURL(), ToolCalling: true}},
		HTTPClient: srv.Client(),
		Resilience: res,
		Getenv:     envMap(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Model(t.Context(), "wire")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWireAgentRun drives the real langchaingo OpenAI client, through the
// registry's provider and resilience, over a full tool-calling run against
// a server speaking OpenAI's streaming protocol.
func TestWireAgentRun(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t,
		llmtest.Response{
			ToolCalls: []llmtest.ToolCall{
				{ID: "call_calc", Name: "calculator", Arguments: `{"expression":"2+2*3"}`},
				{ID: "call_time", Name: "current_time", Arguments: `{"timezone":"Asia/Tokyo"}`},
			},
			ArgChunk: 5,
			Usage:    &llmtest.Usage{PromptTokens: 50, CompletionTokens: 20},
		},
		llmtest.Response{
			Text:  "2+2*3 = 8, and it is 10:00 in Tokyo.",
			Usage: &llmtest.Usage{PromptTokens: 80, CompletionTokens: 12, CachedTokens: 40},
		},
	)
	m := wireModel(t, srv, llm.ResilienceConfig{})
	tools := map[string]func(args map[string]string) string{
		"calculator":   func(map[string]string) string { return "8" },
		"current_time": func(a map[string]string) string { return "10:00 " + a["timezone"] },
	}

	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are Trellis."),
		human("what is 2+2*3, and what time is it in Tokyo?"),
	}
	var streamed strings.Builder
	var usage events.Usage
	var answer string
	for turn := 0; turn < 4 && answer == ""; turn++ {
		resp, err := m.GenerateContent(t.Context(), msgs, llms.WithTools(allTools),
			llms.WithStreamingFunc(llm.TextStream(func(_ context.Context, c []byte) error { streamed.Write(c); return nil })))
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		usage = usage.Add(llm.UsageFrom(resp))
		calls := llm.ToolCallsFrom(resp)
		if len(calls) == 0 {
			answer = llm.TextFrom(resp)
			break
		}
		ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
		for _, c := range calls {
			ai.Parts = append(ai.Parts, c)
		}
		msgs = append(msgs, ai)
		for _, c := range calls {
			var args map[string]string
			if err := json.Unmarshal([]byte(c.FunctionCall.Arguments), &args); err != nil {
				t.Fatalf("tool call %s: arguments %q reassembled wrongly: %v", c.FunctionCall.Name, c.FunctionCall.Arguments, err)
			}
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: c.ID, Name: c.FunctionCall.Name, Content: tools[c.FunctionCall.Name](args)},
			}})
		}
	}

	if answer != "2+2*3 = 8, and it is 10:00 in Tokyo." {
		t.Errorf("answer = %q", answer)
	}
	if streamed.String() != answer {
		t.Errorf("user-facing stream = %q; want only the answer text, no tool-call JSON", streamed.String())
	}
	want := events.Usage{InputTokens: 130, OutputTokens: 32, CacheReadTokens: 40, TotalTokens: 162}
	if usage != want {
		t.Errorf("usage = %+v, want %+v", usage, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first, second := reqs[0], reqs[1]
	if first.Model != "served-model" || !first.Stream || first.StreamOptions == nil || !first.StreamOptions.IncludeUsage {
		t.Errorf("first request: model %q stream %v options %+v", first.Model, first.Stream, first.StreamOptions)
	}
	if first.Temperature == nil || *first.Temperature != llm.DefaultTemperature || len(first.Tools) != len(allTools) {
		t.Errorf("first request: temperature %v, %d tools", first.Temperature, len(first.Tools))
	}
	// The history sent back: system, user, assistant with both calls, two tool results.
	roles := []string{}
	for _, msg := range second.Messages {
		roles = append(roles, msg.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,tool" {
		t.Fatalf("second request roles = %v", roles)
	}
	asst := second.Messages[2]
	if len(asst.ToolCalls) != 2 || asst.ToolCalls[0].Type != "function" || asst.ToolCalls[1].Function.Arguments != `{"timezone":"Asia/Tokyo"}` {
		t.Errorf("assistant tool calls sent back = %+v", asst.ToolCalls)
	}
	if second.Messages[3].ToolCallID != "call_calc" || second.Messages[3].Text() != "8" || second.Messages[4].ToolCallID != "call_time" {
		t.Errorf("tool results sent back = %+v", second.Messages[3:])
	}
}

func TestWireNonStreaming(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t, llmtest.Response{
		Text:      "checking",
		ToolCalls: []llmtest.ToolCall{{Name: "list_tools", Arguments: `{}`}},
		Usage:     &llmtest.Usage{PromptTokens: 20, CompletionTokens: 15, ReasoningTokens: 10},
	})
	m := wireModel(t, srv, llm.ResilienceConfig{})
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("what can you do?")}, llms.WithTools(allTools))
	if err != nil {
		t.Fatal(err)
	}
	calls := llm.ToolCallsFrom(resp)
	if llm.TextFrom(resp) != "checking" || len(calls) != 1 || calls[0].ID != "call_1" || calls[0].FunctionCall.Name != "list_tools" {
		t.Errorf("text %q calls %+v", llm.TextFrom(resp), calls)
	}
	if u := llm.UsageFrom(resp); u != (events.Usage{InputTokens: 20, OutputTokens: 5, ThinkingTokens: 10, TotalTokens: 35}) {
		t.Errorf("usage = %+v", u)
	}
	if srv.Requests()[0].Stream {
		t.Error("no streaming func: the request should not stream")
	}
}

func TestWireRetriesA429AfterItsRetryAfter(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t,
		llmtest.Response{Status: 429, Header: map[string]string{"Retry-After": "0.05"}, ErrorMessage: "rate limited"},
		llmtest.Response{Text: "hello after waiting"},
	)
	// A 10 s backoff: the test only finishes quickly if Retry-After is used.
	m := wireModel(t, srv, llm.ResilienceConfig{BackoffBase: 10 * time.Second})
	start := time.Now()
	var streamed strings.Builder
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")},
		llms.WithStreamingFunc(llm.TextStream(func(_ context.Context, c []byte) error { streamed.Write(c); return nil })))
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if llm.TextFrom(resp) != "hello after waiting" || streamed.String() != "hello after waiting" {
		t.Errorf("text %q, streamed %q", llm.TextFrom(resp), streamed.String())
	}
	if len(srv.Requests()) != 2 || elapsed < 50*time.Millisecond || elapsed > 5*time.Second {
		t.Errorf("%d requests in %s; want a retry after ~50ms", len(srv.Requests()), elapsed)
	}
}

func TestWirePermanentErrorIsNotRetried(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t, llmtest.Response{Status: 400, ErrorMessage: "unknown model"})
	m := wireModel(t, srv, llm.ResilienceConfig{})
	_, err := m.Call(t.Context(), "hi")
	var e *llm.Error
	if err == nil || !strings.Contains(err.Error(), "unknown model") || llm.KindOf(err) != llm.KindPermanent {
		t.Fatalf("err = %v", err)
	}
	if !errors.As(err, &e) || e.StatusCode != 400 || len(srv.Requests()) != 1 {
		t.Errorf("status %d after %d requests", e.StatusCode, len(srv.Requests()))
	}
}

func TestWireStreamCutAfterTextIsNotRetried(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t,
		llmtest.Response{Chunks: []string{"Hello ", "wor", "ld"}, BreakAfterChunks: 2},
		llmtest.Response{Text: "should not be requested"},
	)
	m := wireModel(t, srv, llm.ResilienceConfig{BackoffBase: time.Millisecond})
	var streamed strings.Builder
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")},
		llms.WithStreamingFunc(func(_ context.Context, c []byte) error { streamed.Write(c); return nil }))
	if err == nil || len(srv.Requests()) != 1 || !strings.HasPrefix(streamed.String(), "Hello ") {
		t.Fatalf("err %v, %d requests, streamed %q; want a failure without retry", err, len(srv.Requests()), streamed.String())
	}
}
