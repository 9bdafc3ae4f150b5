package llm_test

import (
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
)

var fileTools = []llms.Tool{
	tool("ls", map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}),
	tool("read_file", map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}}),
	tool("write_file", map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"},
		"content": map[string]any{"type": "string"}, "append": map[string]any{"type": "boolean"}}, "required": []any{"path", "content"}}),
	tool("calculator", map[string]any{"type": "object", "properties": map[string]any{"expression": map[string]any{"type": "string"}}, "required": []any{"expression"}}),
}

func TestOfflineRoutesFiles(t *testing.T) {
	for q, want := range map[string]string{
		"write a file notes.md with hello":                                `write_file {"content":"hello\n","path":"notes.md"}`,
		"Please create a file called plan/today.txt containing: dig, sow": `write_file {"content":"dig, sow\n","path":"plan/today.txt"}`,
		"add a line to notes.md: buy milk":                                `write_file {"append":true,"content":"buy milk\n","path":"notes.md"}`,
		"append to notes.md: 2+2":                                         `write_file {"append":true,"content":"2+2\n","path":"notes.md"}`,
		"read notes.md":                                                   `read_file {"path":"notes.md"}`,
		"show me notes.md":                                                `read_file {"path":"notes.md"}`,
		"show my files":                                                   `ls {}`,
		"List the files":                                                  `ls {}`,
		"what files do I have?":                                           `ls {}`,
		"read me a story":                                                 ``,
		"what is 2+2?":                                                    `calculator {"expression":"2+2"}`,
	} {
		resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human(q)}, llms.WithTools(fileTools))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, c := range llm.ToolCallsFrom(resp) {
			got = c.FunctionCall.Name + " " + c.FunctionCall.Arguments
		}
		if got != want {
			t.Errorf("%q: call %q, want %q", q, got, want)
		}
	}
	// Without the tool it says what it would need.
	resp, _ := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human("show my files")}, llms.WithTools(fileTools[3:]))
	if len(llm.ToolCallsFrom(resp)) != 0 || resp.Choices[0].Content == "" {
		t.Errorf("without ls: %+v", resp.Choices[0])
	}
}

func TestOfflineWordsFileResults(t *testing.T) {
	for _, tc := range []struct{ tool, args, result, want string }{
		{"ls", `{}`, "notes.md\t6 bytes\tversion 1", "Here are your files:\nnotes.md\t6 bytes\tversion 1"},
		{"ls", `{}`, "No files in the conversation workspace.", "No files in the conversation workspace."},
		{"read_file", `{"path":"notes.md"}`, "     1\thello", "Here is notes.md:\n     1\thello"},
		{"write_file", `{"path":"notes.md","content":"hello\n"}`, "Wrote notes.md (6 bytes, version 1) in the conversation workspace.",
			"Wrote notes.md (6 bytes, version 1) in the conversation workspace."},
		{"read_file", `{"path":"x.md"}`, "workspace: not found: x.md", "That did not work: workspace: not found: x.md"},
	} {
		msgs := []llms.MessageContent{
			human("do it"),
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function",
				FunctionCall: &llms.FunctionCall{Name: tc.tool, Arguments: tc.args}}}},
			{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: tc.tool, Content: tc.result}}},
		}
		resp, err := llm.NewOffline().GenerateContent(t.Context(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Content; got != tc.want {
			t.Errorf("%s → %q, want %q", tc.result, got, tc.want)
		}
	}
}
