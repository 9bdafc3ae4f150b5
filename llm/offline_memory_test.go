package llm_test

import (
	"slices"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
)

var memoryTools = []llms.Tool{
	tool("remember", map[string]any{"type": "object", "properties": map[string]any{"fact": map[string]any{"type": "string"}}, "required": []any{"fact"}}),
	tool("recall", map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}}),
}

func TestOfflineRoutesMemory(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want []wantCall
	}{
		{"Remember that I prefer tea over coffee.", []wantCall{{"remember", map[string]string{"fact": "I prefer tea over coffee"}}}},
		{"please remember: my cat is called Mia", []wantCall{{"remember", map[string]string{"fact": "my cat is called Mia"}}}},
		{"What do you remember about me?", []wantCall{{"recall", map[string]string{}}}},
		{"what do you know about me", []wantCall{{"recall", map[string]string{}}}},
		{"I prefer short answers. Remember that my boat is called Nautilus.", []wantCall{{"remember", map[string]string{"fact": "my boat is called Nautilus"}}}},
		{"Hi! Please remember: I live in Lisbon", []wantCall{{"remember", map[string]string{"fact": "I live in Lisbon"}}}},
		{"Do you remember the war of 1812?", nil},
		{"I can't remember that film's name", nil},
	} {
		resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human(tc.q)}, llms.WithTools(memoryTools))
		if err != nil {
			t.Fatal(err)
		}
		got := callsOf(t, resp)
		if !slices.EqualFunc(got, tc.want, func(a, b wantCall) bool { return a.name == b.name && mapsEqual(a.args, b.args) }) {
			t.Errorf("%q: calls = %v, want %v", tc.q, got, tc.want)
		}
	}
	// Without the tools offered, no call.
	resp, _ := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human("remember that x is y")})
	if len(llm.ToolCallsFrom(resp)) != 0 {
		t.Error("called remember without it being offered")
	}
}

func TestOfflineWordsMemoryResults(t *testing.T) {
	msgs := []llms.MessageContent{
		human("What do you remember about me?"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "recall", Arguments: `{}`}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "recall",
			Content: `{"memories": [{"summary": "prefers tea"}, {"summary": "has a cat called Mia"}]}`}}},
	}
	resp, err := llm.NewOffline().GenerateContent(t.Context(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := llm.TextFrom(resp), "Here is what I remember about you:\n- prefers tea\n- has a cat called Mia"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}
