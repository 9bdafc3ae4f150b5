package e2e_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// shownTurn is what the page shows of one turn.
type shownTurn struct {
	User, State, Answer, Usage string
	Activity, Cards            []string
	Directs                    int
}

// shownTurns reads every turn of the transcript.
func shownTurns(p *webtest.Page) []shownTurn {
	return webtest.Eval[[]shownTurn](p, `[...document.querySelectorAll("#transcript > li.turn")].map((t) => ({
		User: t.querySelector(".user-msg .msg-text").textContent,
		State: t.dataset.state,
		Answer: t.querySelector(".answer").textContent.trim(),
		Usage: t.querySelector(".usage").textContent,
		Activity: [...t.querySelectorAll(".activity-log > li")].map((li) => li.textContent.trim()),
		Cards: [...t.querySelectorAll(".card")].map((c) => c.dataset.state + ": " + (c.querySelector(".card-result")?.textContent ?? "")),
		Directs: t.querySelectorAll(".direct-response").length,
	}))`)
}

// TestE2EReloadShowsHistory has four turns in one conversation (a streamed
// answer, an approved tool, a declined elicitation, a cancelled run),
// reloads the page, and finds each turn once, shown as it was live, with
// no stream opened for the finished runs.
func TestE2EReloadShowsHistory(t *testing.T) {
	s := newServer(t, "reload.json")
	p := open(t, s)

	p.Send("What is a trellis?")
	p.WaitText(webtest.LastUsage, "total")
	waitState(p, webtest.LastTurn, "completed")

	p.Send("What is 6*7?")
	p.Click(pendingApproval + ` [data-action="approve"]`)
	p.WaitText(webtest.LastAnswer, "6 × 7 = 42.")
	waitState(p, webtest.LastTurn, "completed")

	p.Send("Book a table.")
	p.Click(pendingElicitation + ` [data-action="decline"]`)
	p.WaitText(webtest.LastAnswer, "No booking, then.")
	waitState(p, webtest.LastTurn, "completed")
	receive(t, "book_table's decline", s.booked)

	p.Send("Write a long essay.")
	p.WaitText(webtest.LastAnswer, "Paragraph 2 ")
	p.Click(webtest.CancelButton)
	waitState(p, webtest.LastTurn, "cancelled")
	p.WaitJS("Send is enabled", `() => !document.querySelector("#send").disabled`)
	p.Screenshot("before-reload")
	live := shownTurns(p)
	cid := conversationID(t, p)
	streams := len(s.requests("GET", "/api/v1/conversations/"+cid+"/stream"))

	p.Reload()
	p.WaitText(turn(4)+" .turn-status", "Cancelled")
	p.WaitText(webtest.ConversationList+` a[aria-current="page"]`, "Trellis") // the title the first message gave
	p.Screenshot("after-reload")
	if got := conversationID(t, p); got != cid {
		t.Errorf("after the reload the page shows conversation %s, want %s", got, cid)
	}
	reloaded := shownTurns(p)
	if n := len(s.requests("GET", "/api/v1/conversations/"+cid)); n != 1 {
		t.Errorf("the page loaded the conversation %d times, want once (after the reload)", n)
	}

	// Each turn once, in order, with its message and answer.
	wantUsers := []string{"What is a trellis?", "What is 6*7?", "Book a table.", "Write a long essay."}
	var users []string
	for _, tn := range reloaded {
		users = append(users, tn.User)
	}
	if !slices.Equal(users, wantUsers) {
		t.Fatalf("the turns after a reload: %q, want %q", users, wantUsers)
	}
	for i, want := range []struct{ state, answer string }{
		{"completed", "A trellis holds up climbing plants."},
		{"completed", "6 × 7 = 42."},
		{"completed", "No booking, then."},
		{"cancelled", ""},
	} {
		got := reloaded[i]
		if got.State != want.state || (want.answer != "" && got.Answer != want.answer) {
			t.Errorf("turn %d after a reload: %s %q, want %s %q", i+1, got.State, got.Answer, want.state, want.answer)
		}
	}
	// As it was live: the same activity, cards, answers.
	for i := range live {
		if fmt.Sprintf("%+v", live[i]) != fmt.Sprintf("%+v", reloaded[i]) {
			t.Errorf("turn %d live:\n%+v\nafter a reload:\n%+v", i+1, live[i], reloaded[i])
		}
	}
	// The stored conversation agrees, and no stream was opened: every
	// run had finished.
	conv := s.conversation(p)
	if len(conv.Runs) != 4 {
		t.Errorf("%d stored runs, want 4", len(conv.Runs))
	}
	if n := len(s.requests("GET", "/api/v1/conversations/"+cid+"/stream")); n != streams || streams != 0 {
		t.Errorf("the page opened %d streams before the reload and %d after; finished runs need none", streams, n-streams)
	}
	if n := p.Count(webtest.ConversationList + " a[data-id]"); n != 1 {
		t.Errorf("%d conversations listed, want 1", n)
	}
	p.CheckAccessible()

	// A second reload shows the same again.
	p.Reload()
	p.WaitText(turn(4)+" .turn-status", "Cancelled")
	if again := shownTurns(p); fmt.Sprintf("%+v", again) != fmt.Sprintf("%+v", reloaded) {
		t.Errorf("a second reload shows\n%+v\nthe first showed\n%+v", again, reloaded)
	}
	s.checkScript()
}
