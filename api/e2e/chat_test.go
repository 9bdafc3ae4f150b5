package e2e_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// TestE2EChatStreamsMarkdown sends a message on the page, sees the answer
// stream in piece by piece, then the whole markdown answer with its token
// usage, as the server stored it.
func TestE2EChatStreamsMarkdown(t *testing.T) {
	s := newServer(t, "chat.json")
	p := open(t, s)
	p.WaitText("#tool-list", "book_table") // GET /tools from the real provider
	p.Send("What is a trellis?")

	// Streaming: part of the answer shows while the run is still going.
	p.WaitJS("a part of the answer, streamed", `() => {
		const t = document.querySelector("#transcript > li.turn:last-of-type");
		const a = t?.querySelector(".answer")?.textContent ?? "";
		return t.dataset.state === "running" && a.includes("A trellis") && !a.includes("bamboo");
	}`)
	if got := p.Attr(webtest.LastAnswer, "aria-busy"); got != "true" {
		t.Errorf("aria-busy while streaming = %q, want true", got)
	}
	p.WaitVisible(webtest.CancelButton)
	p.WaitText(webtest.LastTurn+" .activity", "supervisor")
	p.Screenshot("streaming")

	// The whole answer, as markdown, with the usage.
	p.WaitText(webtest.LastUsage, "total")
	waitState(p, webtest.LastTurn, "completed")
	html := p.HTML(webtest.LastAnswer)
	for _, want := range []string{"<h2>A trellis in brief</h2>", "<strong>trellis</strong>", "<code>vines</code>", "<li>bamboo</li>"} {
		if !strings.Contains(html, want) {
			t.Errorf("the answer's HTML lacks %s: %s", want, html)
		}
	}
	p.WaitText(webtest.LastTurn+" .turn-status", "Done")
	// The supervisor's reasoning, from the model's thinking, collapsed
	// under "Thinking".
	p.WaitText(webtest.LastTurn+" details.thinking .thought", "a direct answer will do")
	if open := webtest.Eval[bool](p, `document.querySelector("#transcript > li.turn:last-of-type details.thinking").open`); open {
		t.Error("the reasoning is shown open; it should be collapsed")
	}
	p.WaitGone(webtest.CancelButton)
	p.WaitText(webtest.ConversationList+` a[aria-current="page"]`, "completed")
	p.CheckAccessible()
	p.Screenshot("answered")

	// The page shows what the server stored.
	conv := s.conversation(p)
	if len(conv.Runs) != 1 || conv.Runs[0].Status != "completed" || conv.Runs[0].UserMessage != "What is a trellis?" {
		t.Fatalf("the stored runs: %+v", conv.Runs)
	}
	total := conv.Runs[0].Usage["total_tokens"]
	if total < 144 {
		t.Errorf("stored usage %v: the write step alone used 144 tokens", conv.Runs[0].Usage)
	}
	if total < 1000 {
		p.WaitText(webtest.LastUsage, strconv.Itoa(total)+" total")
	}

	// A second message goes to the same conversation.
	p.Send("thanks!")
	p.WaitText(webtest.LastAnswer, "You're welcome.")
	waitState(p, webtest.LastTurn, "completed")
	if n := p.Count("#transcript > li.turn"); n != 2 {
		t.Errorf("%d turns, want 2", n)
	}
	if conv := s.conversation(p); len(conv.Runs) != 2 {
		t.Errorf("%d stored runs, want 2", len(conv.Runs))
	}
	s.checkScript()
}
