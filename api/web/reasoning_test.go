package web_test

import (
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// TestReasoningShowsUnderThinking: a thinking model's reasoning shows,
// collapsed under "Thinking", as it streams (as text, never markup),
// one block per node, and again after a reload.
func TestReasoningShowsUnderThinking(t *testing.T) {
	gate := make(chan struct{})
	f := newContractFake(t, func(r *fakeRun) {
		r.emit("node.start", map[string]any{"node": "supervisor"})
		r.emit("supervisor.thinking", map[string]any{"message": "Deciding how to handle your request…"})
		r.emit("reasoning.chunk", map[string]any{"node": "supervisor", "content": "The user wants "})
		r.emit("reasoning.chunk", map[string]any{"node": "supervisor", "content": "<b>a haiku</b>."})
		if !r.await(gate) {
			return
		}
		r.emit("supervisor.decided", map[string]any{"action": "answer", "tools": []string{}, "reasoning": "a poem"})
		r.emit("node.end", map[string]any{"node": "supervisor", "duration_ms": 30, "reasoning": "The user wants <b>a haiku</b>."})
		r.emit("node.start", map[string]any{"node": "write"})
		r.emit("reasoning.chunk", map[string]any{"node": "write", "content": "Five, seven, five."})
		r.emit("response.chunk", map[string]any{"content": "Old pond, frog jumps in."})
		r.emit("node.end", map[string]any{"node": "write", "duration_ms": 20, "reasoning": "Five, seven, five."})
		r.answer()
	})
	p := open(t, f)
	p.Send("Write a haiku")

	thinking := webtest.LastTurn + " details.thinking"
	p.WaitText(thinking+" .thought-text", "The user wants <b>a haiku</b>.")
	if got := p.Text(thinking + " > summary"); got != "Thinking…" {
		t.Errorf("summary while the model thinks = %q", got)
	}
	if open := webtest.Eval[bool](p, `document.querySelector("#transcript > li.turn:last-of-type details.thinking").open`); open {
		t.Error("the reasoning is shown open; it should be collapsed")
	}
	if n := p.Count(thinking + " b"); n != 0 {
		t.Errorf("the reasoning's text became %d elements", n)
	}
	p.Click(thinking + " > summary")
	p.WaitVisible(thinking + " .thought-text")
	p.Screenshot("thinking")
	close(gate)

	p.WaitText(webtest.LastUsage, "165 total")
	p.WaitText(thinking+" > summary", "Thinking")
	if got := p.Text(thinking + " > summary"); got != "Thinking" {
		t.Errorf("summary after the run = %q", got)
	}
	if got := p.Text(webtest.LastAnswer); strings.TrimSpace(got) != "Old pond, frog jumps in." {
		t.Errorf("the answer = %q: reasoning leaked into it", got)
	}
	wantBlocks := func() {
		t.Helper()
		got := webtest.Eval[[]string](p, `[...document.querySelectorAll("#transcript > li.turn:last-of-type .thought")].map(e => e.textContent)`)
		want := []string{"supervisorThe user wants <b>a haiku</b>.", "writeFive, seven, five."}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("reasoning blocks %q, want %q", got, want)
		}
	}
	wantBlocks()
	p.CheckAccessible()

	// A reload shows it the same, collapsed.
	p.Reload()
	p.WaitText(webtest.LastAnswer, "Old pond")
	wantBlocks()
	if open := webtest.Eval[bool](p, `document.querySelector("#transcript > li.turn:last-of-type details.thinking").open`); open {
		t.Error("after a reload the reasoning is shown open")
	}
}
