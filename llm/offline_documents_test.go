package llm_test

import (
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
)

var docTools = append([]llms.Tool{tool("search_documents", map[string]any{"type": "object",
	"properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []any{"query"}})}, allTools...)

func docSystem(status string) llms.MessageContent {
	return llms.TextParts(llms.ChatMessageTypeSystem, "You are Trellis.\n\n"+llm.DocumentsHeading+"\nThe user uploaded these documents.\n"+
		"- d1 (handbook.md) ["+status+"]: Sections: Getting in, The kitchen.\n\n## Progress\n")
}

// With a ready document listed, a question that is not arithmetic or
// time searches the documents; other questions keep their tools, and
// without a ready document nothing changes.
func TestOfflineSearchesReadyDocuments(t *testing.T) {
	for _, tc := range []struct {
		name string
		sys  llms.MessageContent
		q    string
		want []wantCall
	}{
		{"ready", docSystem("ready"), "when does the coffee machine need descaling?",
			[]wantCall{{"search_documents", map[string]string{"query": "when does the coffee machine need descaling?"}}}},
		{"arithmetic", docSystem("ready"), "what is 2+2?", []wantCall{{"calculator", map[string]string{"expression": "2+2"}}}},
		{"time", docSystem("ready"), "what time is it?", []wantCall{{"current_time", map[string]string{}}}},
		{"still processing", docSystem("chunking"), "when does the coffee machine need descaling?", nil},
		{"no documents", llms.TextParts(llms.ChatMessageTypeSystem, "You are Trellis."), "when does the coffee machine need descaling?", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{tc.sys, human(tc.q)}, llms.WithTools(docTools))
			if err != nil {
				t.Fatal(err)
			}
			got := callsOf(t, resp)
			if len(got) != len(tc.want) {
				t.Fatalf("calls %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].name != tc.want[i].name || len(got[i].args) != len(tc.want[i].args) || got[i].args["query"] != tc.want[i].args["query"] ||
					got[i].args["expression"] != tc.want[i].args["expression"] {
					t.Errorf("call %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if tc.want == nil && llm.TextFrom(resp) != llm.OfflineNotice {
				t.Errorf("answer %q", llm.TextFrom(resp))
			}
		})
	}
}

// The answer quotes the passages' best sentences with their numbers from
// the prompt's sources.
func TestOfflineQuotesDocumentPassages(t *testing.T) {
	kitchen := "## The kitchen\n\nThe coffee machine on the third floor is called Bertha. She needs descaling\nevery second Friday, and the descaling tablets live in the drawer under the\nsink.\n\n## Quiet rooms\n\nRooms 3.14 and 3.15 are quiet rooms."
	result := `{"query":"q","results":[{"document_id":"d1","filename":"handbook.md","chunk":1,"start":10,"end":200,"text":` +
		jsonString(kitchen) + `},{"document_id":"d1","filename":"handbook.md","chunk":0,"start":0,"end":40,"text":"# Field guide\n\nThe front door opens with the blue badge."}]}`
	sys := llms.TextParts(llms.ChatMessageTypeSystem, "You are Trellis.\n\n## Your task: answer the user\nCite.\n\n"+llm.SourcesHeading+"\n"+
		"[1] handbook.md — document d1, chunk 1, characters 10–200\n"+kitchen+"\n\n"+
		"[2] handbook.md — document d1, chunk 0, characters 0–40\n# Field guide\n\nThe front door opens with the blue badge.\n\n")
	msgs := []llms.MessageContent{sys, human("When does the coffee machine need descaling?"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "search_documents", Arguments: `{"query":"coffee machine descaling"}`}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "search_documents", Content: result}}},
	}
	resp, err := llm.NewOffline().GenerateContent(t.Context(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := "From handbook.md: “The coffee machine on the third floor is called Bertha. She needs descaling every second Friday, " +
		"and the descaling tablets live in the drawer under the sink.” [1]"
	if got := llm.TextFrom(resp); got != want {
		t.Errorf("answer\n got %q\nwant %q", got, want)
	}
	// Without numbered sources (the supervisor reading the result), the
	// quote has no number; an empty search says so.
	resp, _ = llm.NewOffline().GenerateContent(t.Context(), msgs[1:])
	if got := llm.TextFrom(resp); !strings.HasPrefix(got, "From handbook.md: “The coffee machine") || strings.Contains(got, "[") {
		t.Errorf("answer without sources %q", got)
	}
	msgs[3].Parts[0] = llms.ToolCallResponse{ToolCallID: "c1", Name: "search_documents", Content: `{"query":"q","results":[],"note":"nothing matched"}`}
	resp, _ = llm.NewOffline().GenerateContent(t.Context(), msgs)
	if got := llm.TextFrom(resp); !strings.Contains(got, "found nothing") {
		t.Errorf("answer to an empty search %q", got)
	}
}

// A question's words match the passage's other forms of them: "who
// descales" finds the sentence that says "descaled", beside the one that
// names the machine.
func TestOfflineMatchesWordForms(t *testing.T) {
	notes := "# Office handbook\n\n## Coffee\n\nThe coffee machine on the third floor is called Bertha. It is descaled every Tuesday by Sam.\n\n## Parking\n\nVisitors park in bay 12."
	result := `{"query":"q","results":[{"document_id":"d1","filename":"notes.md","chunk":0,"start":0,"end":150,"text":` + jsonString(notes) + `}]}`
	msgs := []llms.MessageContent{human("Who descales the coffee machine?"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "search_documents", Arguments: `{"query":"who descales the coffee machine"}`}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "search_documents", Content: result}}},
	}
	resp, err := llm.NewOffline().GenerateContent(t.Context(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := "From notes.md: “The coffee machine on the third floor is called Bertha. It is descaled every Tuesday by Sam.”"
	if got := llm.TextFrom(resp); got != want {
		t.Errorf("answer\n got %q\nwant %q", got, want)
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
