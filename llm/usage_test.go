package llm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
)

func respWith(infos ...map[string]any) *llms.ContentResponse {
	r := &llms.ContentResponse{}
	for _, info := range infos {
		r.Choices = append(r.Choices, &llms.ContentChoice{GenerationInfo: info})
	}
	return r
}

func TestUsageFromEachProvider(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp *llms.ContentResponse
		want events.Usage
	}{
		{"openai with reasoning and cache", respWith(map[string]any{
			"PromptTokens": 100, "CompletionTokens": 50, "TotalTokens": 150, "ReasoningTokens": 20,
			"ThinkingTokens": 20, "CompletionReasoningTokens": 20, "PromptCachedTokens": 40}),
			events.Usage{InputTokens: 100, OutputTokens: 30, ThinkingTokens: 20, CacheReadTokens: 40, TotalTokens: 150}},
		{"anthropic repeated on every choice", respWith(
			map[string]any{"InputTokens": 10, "OutputTokens": 7, "CacheReadInputTokens": 100, "CacheCreationInputTokens": 5},
			map[string]any{"InputTokens": 10, "OutputTokens": 7, "CacheReadInputTokens": 100, "CacheCreationInputTokens": 5}),
			events.Usage{InputTokens: 115, OutputTokens: 7, CacheReadTokens: 100, CacheWriteTokens: 5, TotalTokens: 122}},
		{"googleai int32", respWith(map[string]any{"PromptTokens": int32(12), "CompletionTokens": int32(3), "TotalTokens": int32(15)}),
			events.Usage{InputTokens: 12, OutputTokens: 3, TotalTokens: 15}},
		{"bedrock snake case float", respWith(map[string]any{"input_tokens": float64(8), "output_tokens": float64(2)}),
			events.Usage{InputTokens: 8, OutputTokens: 2, TotalTokens: 10}},
		{"ollama", respWith(map[string]any{"PromptTokens": 9, "CompletionTokens": 4, "TotalTokens": 13, "ThinkingTokens": 0}),
			events.Usage{InputTokens: 9, OutputTokens: 4, TotalTokens: 13}},
		{"first choice without usage", respWith(nil, map[string]any{"PromptTokens": 1, "CompletionTokens": 1}),
			events.Usage{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}},
		{"nil", nil, events.Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := llm.UsageFrom(tc.resp); got != tc.want {
				t.Errorf("UsageFrom = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestUsageAddAndJSON(t *testing.T) {
	a := events.Usage{InputTokens: 1, OutputTokens: 2, ThinkingTokens: 3, CacheReadTokens: 4, CacheWriteTokens: 5, TotalTokens: 6}
	sum := a.Add(a)
	if sum != (events.Usage{InputTokens: 2, OutputTokens: 4, ThinkingTokens: 6, CacheReadTokens: 8, CacheWriteTokens: 10, TotalTokens: 12}) {
		t.Errorf("Add = %+v", sum)
	}
	b, _ := json.Marshal(a)
	want := `{"input_tokens":1,"output_tokens":2,"thinking_tokens":3,"cache_read_tokens":4,"cache_write_tokens":5,"total_tokens":6}`
	if string(b) != want {
		t.Errorf("JSON = %s, want %s (API.md)", b, want)
	}
	if !(events.Usage{}).IsZero() || a.IsZero() {
		t.Error("IsZero")
	}
}

func TestTextStreamDropsToolDeltasAndEmptyChunks(t *testing.T) {
	var got []string
	fn := llm.TextStream(func(_ context.Context, c []byte) error { got = append(got, string(c)); return nil })
	for _, c := range []string{
		"Hello",
		`[{"id":"call_1","type":"function","function":{"name":"calculator","arguments":""}}]`,
		`[{"type":"","function":{"name":"","arguments":"{\"expr"}}]`,
		"",
		" [1, 2]",
		`{"name":"f","arguments":"{}"}`,
		` {"a": 1}`,
		" world",
	} {
		if err := fn(t.Context(), []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"Hello", " [1, 2]", ` {"a": 1}`, " world"}
	if len(got) != len(want) {
		t.Fatalf("forwarded %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("chunk %d = %q, want %q", i, got[i], want[i])
		}
	}
	if llm.TextStream(nil) != nil {
		t.Error("TextStream(nil) should be nil")
	}
}

func TestToolCallsFromEveryChoice(t *testing.T) {
	resp := &llms.ContentResponse{Choices: []*llms.ContentChoice{
		{Content: "Let me check."},
		{ToolCalls: []llms.ToolCall{{ID: "a", FunctionCall: &llms.FunctionCall{Name: "x", Arguments: "{}"}}}},
		{ToolCalls: []llms.ToolCall{{ID: "b", Type: "function", FunctionCall: &llms.FunctionCall{Name: "y", Arguments: "{}"}}}},
	}}
	calls := llm.ToolCallsFrom(resp)
	if len(calls) != 2 || calls[0].ID != "a" || calls[0].Type != "function" || calls[1].ID != "b" {
		t.Errorf("calls = %+v; want both, typed function", calls)
	}
	if llm.TextFrom(resp) != "Let me check." {
		t.Errorf("text = %q", llm.TextFrom(resp))
	}
}
