package nodes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// conversation makes n earlier turns of a user and an assistant message,
// each with a tool call and result, then the current turn's user message.
func conversation(n int, size int) ChatState {
	var s ChatState
	body := strings.Repeat("x", size)
	for turn := 1; turn <= n; turn++ {
		s.Messages = append(s.Messages,
			Message{Role: RoleUser, Content: fmt.Sprintf("question %d %s", turn, body), Turn: turn},
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: fmt.Sprint("c", turn), Tool: "search"}}, Turn: turn},
			Message{Role: RoleTool, ToolCallID: fmt.Sprint("c", turn), Content: "result", Turn: turn},
			Message{Role: RoleAssistant, Content: fmt.Sprintf("answer %d %s", turn, body), Turn: turn},
		)
	}
	s.Turn = n + 1
	s.Messages = append(s.Messages, Message{Role: RoleUser, Content: "now", Turn: n + 1})
	return s
}

func contents(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, strings.Fields(m.Content + " " + string(m.Role))[0])
	}
	return out
}

func TestWindowEarlierTurnsAreTextOnly(t *testing.T) {
	s := conversation(3, 0)
	v := (&Window{}).view(&s)
	if got := roles(v); got != "user,assistant,user,assistant,user,assistant,user" {
		t.Errorf("view roles = %s", got)
	}
	if v[len(v)-1].Content != "now" {
		t.Errorf("last = %+v", v[len(v)-1])
	}
}

func TestWindowCapsMessagesAndTokens(t *testing.T) {
	s := conversation(30, 0)
	v := (&Window{Messages: 6}).view(&s)
	if len(v) != 7 || !strings.HasPrefix(v[0].Content, "question 28") {
		t.Errorf("capped by count: %d messages, first %q", len(v), v[0].Content)
	}
	s = conversation(10, 400) // ~100 tokens a message
	v = (&Window{Tokens: 450}).view(&s)
	if len(v) != 5 || !strings.HasPrefix(v[0].Content, "question 9") {
		t.Errorf("capped by tokens: %d messages: %v", len(v), contents(v))
	}
}

func TestWindowTrimsAnOversizedCurrentTurn(t *testing.T) {
	s := ChatState{Turn: 1, Messages: []Message{{Role: RoleUser, Content: "q", Turn: 1}}}
	for i := range 20 {
		id := fmt.Sprint("c", i)
		s.Messages = append(s.Messages,
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Tool: "t"}}, Turn: 1},
			Message{Role: RoleTool, ToolCallID: id, Content: strings.Repeat("r", 400), Turn: 1})
	}
	v := (&Window{Tokens: 500}).view(&s)
	if v[0].Content != "q" || v[1].Role != RoleAssistant || v[len(v)-1].ToolCallID != "c19" || len(v) >= 41 {
		t.Errorf("trimmed turn: %s", roles(v))
	}
	for i := 1; i < len(v); i += 2 {
		if v[i].Role != RoleAssistant || v[i+1].Role != RoleTool || v[i].ToolCalls[0].ID != v[i+1].ToolCallID {
			t.Fatalf("a tool result lost its call: %s", roles(v))
		}
	}
}

func TestFoldKeepsARollingSummary(t *testing.T) {
	w := &Window{Messages: 4}
	s := conversation(5, 0)
	now := s.Messages[len(s.Messages)-1]
	s.Messages = s.Messages[:len(s.Messages)-1] // fold runs before the turn's message is added
	v, ok := w.fold(s.Messages, summaryView{})
	if !ok {
		t.Fatal("nothing folded")
	}
	summary, upTo := v.summary, v.upTo
	if !strings.Contains(summary, "- User: question 1") || !strings.Contains(summary, "- Assistant: answer 4") || strings.Contains(summary, "question 5") {
		t.Errorf("summary:\n%s", summary)
	}
	s.Summary, s.SummaryUpTo = summary, upTo
	s.Messages = append(s.Messages, now)
	if s.Messages[upTo].Content != "question 5 " {
		t.Errorf("summary covers up to %d (%q)", upTo, s.Messages[upTo].Content)
	}
	if got := contents(w.view(&s)); strings.Join(got, " ") != "question answer now" {
		t.Errorf("view after fold: %v", got)
	}
	// Nothing to fold now.
	if _, ok := w.fold(s.Messages[:len(s.Messages)-1], v); ok {
		t.Error("folded again")
	}
	// The summary stays within its budget, newest lines kept.
	long := extractive(strings.Repeat("- User: old\n", 500), []Message{{Role: RoleUser, Content: "newest"}}, 50)
	if estimateTokens(long) > 60 || !strings.HasSuffix(long, "- User: newest") {
		t.Errorf("bounded summary (%d tokens): %q", estimateTokens(long), long)
	}
}

// Two long turns outgrow the token budget with fewer messages than half
// the message cap: the older turn folds, the newest stays.
func TestFoldFewLongMessages(t *testing.T) {
	w := &Window{Messages: 20, Tokens: 1000}
	s := conversation(2, 1200) // ~300 tokens a message, 4 earlier texts
	s.Messages = s.Messages[:len(s.Messages)-1]
	v, ok := w.fold(s.Messages, summaryView{})
	if !ok {
		t.Fatal("nothing folded")
	}
	if !strings.Contains(v.summary, "- User: question 1") || strings.Contains(v.summary, "question 2") {
		t.Errorf("summary:\n%s", v.summary)
	}
	if s.Messages[v.upTo].Content != "question 2 "+strings.Repeat("x", 1200) {
		t.Errorf("summary covers up to %d (%.20q)", v.upTo, s.Messages[v.upTo].Content)
	}
}

func roles(msgs []Message) string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Role))
	}
	return strings.Join(out, ",")
}

// toLLM's messages of one part share an array of parts: a part a model
// adds to one leaves the next as it was.
func TestToLLMMessagesKeepTheirOwnParts(t *testing.T) {
	msgs := toLLM("system", []Message{{Role: RoleUser, Content: "q"}, {Role: RoleAssistant, Content: "a"},
		{Role: RoleTool, ToolCallID: "c1", Name: "search", Content: "r"}})
	want := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "system"),
		llms.TextParts(llms.ChatMessageTypeHuman, "q"),
		llms.TextParts(llms.ChatMessageTypeAI, "a"),
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "search", Content: "r"}}},
	}
	for i := range msgs {
		msgs[i].Parts = append(msgs[i].Parts, llms.TextContent{Text: "added"})
	}
	for i := range want {
		if got := msgs[i].Parts[0]; len(msgs[i].Parts) != 2 || got != want[i].Parts[0] || msgs[i].Role != want[i].Role {
			t.Errorf("message %d: %s %v, want %s %v and the part added", i, msgs[i].Role, msgs[i].Parts, want[i].Role, want[i].Parts)
		}
	}
}
