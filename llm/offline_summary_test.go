package llm_test

import (
	"strconv"
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

// FuzzOfflineSummary: whatever text it is given (a user's words among
// it), the offline model's summary never panics, keeps within the words
// the prompt allows, and only repeats what it was given.
func FuzzOfflineSummary(f *testing.F) {
	f.Add("- User: My name is Priya. I paid 40 EUR.\n- Assistant: Noted!", 50)
	f.Add(llm.SummarySoFarLabel+"\n- User: Bluefin\n\n"+llm.TranscriptLabel+"\n- User: a. b? c!\n", 3)
	f.Add("\n\n- User:\n- Assistant:  . ? !", 0)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		limit = limit%500 + 1
		if limit < 1 {
			limit += 500
		}
		resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, llm.ConversationSummaryHeading+"\nWrite at most "+strconv.Itoa(limit)+" words."),
			llms.TextParts(llms.ChatMessageTypeHuman, text),
		})
		if err != nil {
			t.Fatal(err)
		}
		got := llm.TextFrom(resp)
		if got == "No facts to keep." {
			return
		}
		words := 0
		for line := range strings.SplitSeq(got, "\n") {
			line = strings.TrimPrefix(line, "- ")
			line = strings.TrimPrefix(strings.TrimPrefix(line, "User: "), "Assistant: ")
			words += len(strings.Fields(line)) + 1
			if !strings.Contains(text, line) {
				t.Fatalf("summary line %q is not in the text %q", line, text)
			}
		}
		if words > limit {
			t.Fatalf("%d words over a limit of %d: %q", words, limit, got)
		}
	})
}
