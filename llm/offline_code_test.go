package llm_test

import (
	"slices"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
)

var codeTools = []llms.Tool{
	tool("run_code", map[string]any{"type": "object", "properties": map[string]any{"code": map[string]any{"type": "string"}}, "required": []any{"code"}}),
	tool("calculator", map[string]any{"type": "object", "properties": map[string]any{"expression": map[string]any{"type": "string"}}, "required": []any{"expression"}}),
}

func TestOfflineRoutesCode(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want []wantCall
	}{
		// 1+2 is code to run, not arithmetic for the calculator.
		{"run this code: 1+2", []wantCall{{"run_code", map[string]string{"code": "1+2"}}}},
		{"Please execute the following JavaScript: console.log('hi')", []wantCall{{"run_code", map[string]string{"code": "console.log('hi')"}}}},
		{"run this code:\n```js\nconst x = 2;\nx * 21\n```", []wantCall{{"run_code", map[string]string{"code": "const x = 2;\nx * 21"}}}},
		{"Run my script: [1, 2].map(x => x + 1)", []wantCall{{"run_code", map[string]string{"code": "[1, 2].map(x => x + 1)"}}}},
		{"how do I run this code in node?", nil},
		{"what is 1+2?", []wantCall{{"calculator", map[string]string{"expression": "1+2"}}}},
	} {
		resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human(tc.q)}, llms.WithTools(codeTools))
		if err != nil {
			t.Fatal(err)
		}
		got := callsOf(t, resp)
		if !slices.EqualFunc(got, tc.want, func(a, b wantCall) bool { return a.name == b.name && mapsEqual(a.args, b.args) }) {
			t.Errorf("%q: calls = %v, want %v", tc.q, got, tc.want)
		}
	}
	// Without run_code offered, it says what it would need, and does not
	// hand the program to the calculator.
	resp, _ := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human("run this code: 1+2")}, llms.WithTools(codeTools[1:]))
	if len(llm.ToolCallsFrom(resp)) != 0 {
		t.Error("called a tool for code without run_code offered")
	}
}

func TestOfflineWordsCodeResults(t *testing.T) {
	for result, want := range map[string]string{
		"hi\n=> 3": "I ran the code:\nhi\n=> 3",
		`{"error": "run_code: sandbox: the program ran past its time limit of 5s"}`: "The code did not finish: run_code: sandbox: the program ran past its time limit of 5s",
		"run_code: sandbox: the program threw: Error: boom":                         "The code did not finish: run_code: sandbox: the program threw: Error: boom",
	} {
		msgs := []llms.MessageContent{
			human("run this code: console.log('hi'); 1+2"),
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function",
				FunctionCall: &llms.FunctionCall{Name: "run_code", Arguments: `{"code": "console.log('hi'); 1+2"}`}}}},
			{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "run_code", Content: result}}},
		}
		resp, err := llm.NewOffline().GenerateContent(t.Context(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		if got := llm.TextFrom(resp); got != want {
			t.Errorf("text = %q, want %q", got, want)
		}
	}
}
