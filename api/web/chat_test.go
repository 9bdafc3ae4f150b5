package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

func TestSendMessageStreamsMarkdown(t *testing.T) {
	gate := make(chan struct{})
	f := newContractFake(t, func(r *fakeRun) {
		r.emit("node.start", map[string]any{"node": "supervisor"})
		r.emit("supervisor.thinking", map[string]any{"message": "reading the question"})
		r.emit("supervisor.decided", map[string]any{"action": "answer", "tools": []string{}, "reasoning": "a direct answer will do"})
		r.emit("node.end", map[string]any{"node": "supervisor", "duration_ms": 12})
		r.emit("response.chunk", map[string]any{"content": "## Plan\n\nHere is **bo"})
		r.emit("response.chunk", map[string]any{"content": "ld** text"})
		if !r.await(gate) {
			return
		}
		r.emit("response.chunk", map[string]any{"content": " and `code`.\n\n- one\n- two\n\nSee [1]."})
		r.finish("## Plan\n\nHere is **bold** text and `code`.\n\n- one\n- two\n\nSee [1].", []map[string]any{
			{"number": 1, "source": "https://go.dev/doc/go1.26", "title": "Go 1.26 release notes"},
		})
	})
	p := open(t, f)
	p.WaitText("#tool-list", "send_email")
	p.Send("Hello there")

	// The text streams in before the answer is done.
	p.WaitText(webtest.LastAnswer, "Here is bold text")
	if got := p.Attr(webtest.LastAnswer, "aria-busy"); got != "true" {
		t.Errorf("aria-busy while streaming = %q, want true", got)
	}
	p.WaitVisible(webtest.CancelButton)
	p.Screenshot("streaming")
	close(gate)

	p.WaitText(webtest.LastUsage, "165 total")
	html := p.HTML(webtest.LastAnswer)
	for _, want := range []string{"<h2>Plan</h2>", "<strong>bold</strong>", "<code>code</code>", "<li>one</li>"} {
		if !strings.Contains(html, want) {
			t.Errorf("the answer's HTML lacks %s: %s", want, html)
		}
	}
	p.WaitText(webtest.LastTurn+" .citations", "Go 1.26 release notes")
	if got := p.Attr(webtest.LastTurn+" .citations a", "href"); got != "https://go.dev/doc/go1.26" {
		t.Errorf("citation link = %q", got)
	}
	if got := p.Attr(webtest.LastAnswer, "aria-busy"); got != "false" {
		t.Errorf("aria-busy when done = %q, want false", got)
	}
	p.WaitGone(webtest.CancelButton)
	p.WaitText(webtest.ConversationList+` a[aria-current="page"]`, "Hello there")
	p.CheckAccessible()
	p.Screenshot("answered")

	chat := f.requestsTo("POST", "/api/v1/chat", 1)[0]
	jsonEqual(t, "the chat body", chat.Body, `{"message": "Hello there"}`)
	if got := chat.Header.Get("Accept"); got != "text/event-stream" {
		t.Errorf("the chat request's Accept = %q", got)
	}
	if got := webtest.Eval[string](p, "location.hash"); got != "#/c/conv-1" {
		t.Errorf("location.hash = %q, want the conversation", got)
	}

	// Shift+Enter makes a new line; Enter sends the next message in the
	// same conversation.
	p.Type(webtest.Composer, "Line one")
	p.Enter(chromedp.ModifierShift)
	p.Type(webtest.Composer, "line two")
	if got := webtest.Eval[string](p, `document.querySelector("#composer-input").value`); got != "Line one\nline two" {
		t.Errorf("composer after Shift+Enter = %q", got)
	}
	p.Enter()
	second := f.requestsTo("POST", "/api/v1/chat", 2)[1]
	jsonEqual(t, "the second chat body", second.Body, `{"message": "Line one\nline two", "conversation_id": "conv-1"}`)
	p.WaitText(webtest.LastTurn+" .user-msg", "line two")
}
