package e2e_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// TestE2ECancelRun stops a slow answer with the Stop button: the turn shows
// Cancelled, the server records the run as cancelled, and the
// conversation takes the next message.
func TestE2ECancelRun(t *testing.T) {
	s := newServer(t, "cancel.json")
	p := open(t, s)
	p.Send("Write a long essay about trellises.")
	p.WaitText(webtest.LastAnswer, "Paragraph 1 ")
	p.WaitVisible(webtest.CancelButton)
	p.Screenshot("before-cancel")

	p.Click(webtest.CancelButton)
	waitState(p, webtest.LastTurn, "cancelled")
	p.WaitText(webtest.LastTurn+" .turn-status", "Cancelled")
	p.WaitGone(webtest.CancelButton)
	p.WaitJS("Send is enabled", `() => !document.querySelector("#send").disabled`)
	if got := p.Text(webtest.LastAnswer); strings.Contains(got, "Paragraph 60") {
		t.Errorf("the whole essay arrived; the run was not cancelled: %q", got)
	}
	p.Screenshot("cancelled")
	cid := conversationID(t, p)
	if n := len(s.requests("POST", "/api/v1/conversations/"+cid+"/cancel")); n != 1 {
		t.Errorf("the page asked to cancel %d times", n)
	}

	// The server says so too.
	conv := s.conversation(p)
	if len(conv.Runs) != 1 {
		t.Fatalf("stored runs: %+v", conv.Runs)
	}
	run := conv.Runs[0]
	if run.Status != "cancelled" || run.CompletedAt == nil {
		t.Errorf("the stored run: status %q, completed at %v", run.Status, run.CompletedAt)
	}
	if evs := run.Events; len(evs) == 0 || evs[len(evs)-1].Type != "run.cancelled" {
		t.Errorf("the stored events end with %v, want run.cancelled", evs)
	}
	if list := getJSON[conversationList](s, "/api/v1/conversations"); len(list.Conversations) != 1 || list.Conversations[0].Status != "cancelled" {
		t.Errorf("conversations: %+v", list.Conversations)
	}
	// Nothing is running now: a second cancel is a conflict.
	if status := post(t, s, "/api/v1/conversations/"+cid+"/cancel"); status != http.StatusConflict {
		t.Errorf("a second cancel answered %d, want 409", status)
	}

	// The conversation goes on.
	p.Send("Are you still there?")
	p.WaitText(webtest.LastAnswer, "Yes, still here.")
	waitState(p, webtest.LastTurn, "completed")
	if n := p.Count("#transcript > li.turn"); n != 2 {
		t.Errorf("%d turns, want 2", n)
	}
	s.checkScript()
}

// conversationList is GET /api/v1/conversations.
type conversationList struct {
	Conversations []struct {
		ID     string `json:"id"`
		Title  string `json:"title"`
		Status string `json:"status"`
	} `json:"conversations"`
}
