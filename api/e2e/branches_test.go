package e2e_test

import (
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// TestE2EBranches edits a message twice, then moves between its three
// versions with "< i / n >": each shows its own answer, and the next
// message continues the version shown.
func TestE2EBranches(t *testing.T) {
	s := newServer(t, "branches.json")
	p := open(t, s)
	p.Send("Tell me about apples.")
	p.WaitText(webtest.LastAnswer, "Apples are red.")
	for _, msg := range []string{"Tell me about pears.", "Tell me about plums."} {
		last := turn(p.Count("#transcript > li.turn"))
		p.Click(last + ` [data-action="edit-message"]`)
		p.Fill(last+" .msg-editor textarea", msg)
		p.Click(last + ` [data-action="rerun"]`)
		waitState(p, webtest.LastTurn, "completed")
	}
	p.WaitText(webtest.LastAnswer, "Plums are purple.")

	// Read again, the conversation shows its active branch, the last edit.
	p.Reload()
	p.WaitText(webtest.LastAnswer, "Plums are purple.")
	if n := p.Count("#transcript > li.turn"); n != 1 {
		t.Fatalf("%d turns shown, want the active branch's one", n)
	}
	p.WaitText(turn(1)+" .branch-label", "3 / 3")
	p.CheckAccessible()
	p.Screenshot("three-versions")

	p.Click(turn(1) + ` [data-action="prev-branch"]`)
	p.WaitText(turn(1)+" .branch-label", "2 / 3")
	p.WaitText(webtest.LastAnswer, "Pears are green.")
	p.Click(turn(1) + ` [data-action="prev-branch"]`)
	p.WaitText(turn(1)+" .branch-label", "1 / 3")
	p.WaitText(webtest.LastAnswer, "Apples are red.")
	if got := p.Text(turn(1) + " .user-msg .msg-text"); got != "Tell me about apples." {
		t.Errorf("the first version's message %q", got)
	}
	p.Screenshot("first-version")

	// The next message follows the version shown.
	p.Send("And what next?")
	p.WaitText(webtest.LastAnswer, "Going on.")
	waitState(p, webtest.LastTurn, "completed")
	cid := conversationID(t, p)
	c := getJSON[branchedConversation](s, "/api/v1/conversations/"+cid)
	var apples, next string
	for _, r := range c.Runs {
		switch r.UserMessage {
		case "Tell me about apples.":
			apples = r.ID
		case "And what next?":
			next = r.ParentID
		}
	}
	if next == "" || next != apples {
		t.Errorf("the next message follows run %q, want the first version's, %q", next, apples)
	}
	p.Reload()
	p.WaitText(webtest.LastAnswer, "Going on.")
	p.WaitText(turn(1)+" .branch-label", "1 / 3")
}

// TestE2ERetry retries a turn a model outage failed: the Retry button
// takes it up again and the answer comes; read again, the retried turn
// is the second version of its message.
func TestE2ERetry(t *testing.T) {
	s := newServer(t, "branches.json")
	p := open(t, s)
	p.Send("Tell me about apples.")
	p.WaitText(webtest.LastAnswer, "Apples are red.")
	p.Send("Something flaky, please.")
	waitState(p, webtest.LastTurn, "failed")
	p.WaitVisible(webtest.LastTurn + ` [data-action="retry"]`)
	p.CheckAccessible()
	p.Screenshot("failed")

	p.Click(webtest.LastTurn + ` [data-action="retry"]`)
	p.WaitText(webtest.LastAnswer, "Steady now.")
	waitState(p, webtest.LastTurn, "completed")
	if n := p.Count("#transcript > li.turn.superseded"); n != 1 {
		t.Errorf("%d superseded turns, want the failed one", n)
	}
	cid := conversationID(t, p)
	var failed string
	for _, r := range s.conversation(p).Runs {
		if r.Status == "failed" {
			failed = r.ID
		}
	}
	if n := len(s.requests("POST", "/api/v1/conversations/"+cid+"/runs/"+failed+"/retry")); failed == "" || n != 1 {
		t.Errorf("%d retries of the failed run %q, want 1", n, failed)
	}
	p.Reload()
	p.WaitText(webtest.LastAnswer, "Steady now.")
	if n := p.Count("#transcript > li.turn"); n != 2 {
		t.Errorf("%d turns after a reload, want 2", n)
	}
	p.WaitText(webtest.LastTurn+" .branch-label", "2 / 2")
	p.WaitGone(webtest.LastTurn + ` [data-action="retry"]`)
	s.checkScript()
}

// branchedConversation is what the branch tests read of GET
// /api/v1/conversations/{id}.
type branchedConversation struct {
	Runs []struct {
		ID          string `json:"id"`
		ParentID    string `json:"parent_id"`
		UserMessage string `json:"user_message"`
	} `json:"runs"`
}
