package llm_test

import (
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
)

// TestOfflineSummaryKeepsFacts: asked for a summary with no key, the
// offline model keeps the sentences with names, numbers and decisions,
// the previous summary's lines included, and drops chatter and its own
// notice.
func TestOfflineSummaryKeepsFacts(t *testing.T) {
	human := llm.SummarySoFarLabel + "\n- User: My name is Priya Raman.\n\n" + llm.TranscriptLabel + "\n" +
		"- User: hello there, how are you doing today\n" +
		"- Assistant: " + llm.OfflineNotice + "\n" +
		"- User: ok. We decided to ship on 14 March. The budget is 42,000 euros.\n"
	resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, llm.ConversationSummaryHeading+"\nWrite at most 200 words."),
		llms.TextParts(llms.ChatMessageTypeHuman, human),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := llm.TextFrom(resp)
	want := "- User: My name is Priya Raman.\n- User: We decided to ship on 14 March.\n- User: The budget is 42,000 euros."
	if got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}

	// Over its word limit, the lines with the fewest facts go first.
	resp, err = llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, llm.ToolResultSummaryHeading+"\nWrite at most 14 words."),
		llms.TextParts(llms.ChatMessageTypeHuman, llm.TranscriptLabel+"\nThe order ships Monday.\nInvoice 7731 of ACME Corp is due on 2026-03-14 for 950 EUR.\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := llm.TextFrom(resp); got != "- Invoice 7731 of ACME Corp is due on 2026-03-14 for 950 EUR." {
		t.Errorf("bounded summary: %q", got)
	}
	if strings.Contains(llm.TextFrom(resp), "Monday") {
		t.Error("kept the line with fewer facts")
	}
}
