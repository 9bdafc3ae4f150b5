package e2e_test

import (
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// pendingApproval is the selector of the last turn's approval card that
// waits for an answer.
const pendingApproval = webtest.LastTurn + ` .approval-card[data-state="pending"]`

// TestE2EApprovalApproveAndReject approves a tool from its card (the tool
// runs and the answer arrives), then rejects a proposal with a reason and
// approves the agent's revised one.
func TestE2EApprovalApproveAndReject(t *testing.T) {
	s := newServer(t, "approval.json")
	p := open(t, s)
	p.WaitText("#tool-list", "needs approval")

	// Approve: the calculator needs approval by the server's policy.
	p.Send("What is 6*7? Use the calculator.")
	p.WaitVisible(pendingApproval)
	p.WaitText(pendingApproval+" h3", "calculator")
	p.WaitText(pendingApproval+" pre.args", `"expression": "6*7"`)
	p.WaitText(webtest.LastTurn+" .turn-status", "Working")
	id := p.Attr(pendingApproval, "data-approval-id")
	if id == "" {
		t.Fatal("the approval card has no id")
	}
	pending := getJSON[pendingApprovals](s, "/api/v1/approvals/pending?conversation_id="+conversationID(t, p))
	if len(pending.Approvals) != 1 || pending.Approvals[0].ID != id || pending.Approvals[0].Tool != "calculator" {
		t.Errorf("pending approvals on the server: %+v, the card shows %s", pending.Approvals, id)
	}
	p.CheckAccessible()
	p.Screenshot("approval-card")

	card := `.approval-card[data-approval-id="` + id + `"]`
	p.Click(card + ` [data-action="approve"]`)
	p.WaitText(card+" .card-result", "Approved")
	tool := webtest.LastTurn + " .act-tool"
	p.WaitText(tool, "calculator")
	p.WaitText(tool+" .tool-status", "done")
	p.WaitText(tool+" details:last-of-type pre", "42") // the tool's result
	p.WaitText(webtest.LastAnswer, "6 × 7 = 42.")
	p.WaitText(webtest.LastUsage, "total")
	waitState(p, webtest.LastTurn, "completed")
	openAll(p, webtest.LastTurn+" .activity, "+webtest.LastTurn+" .act-tool details")
	p.Screenshot("approved")
	if n := len(s.requests("POST", "/api/v1/approvals/"+id)); n != 1 {
		t.Errorf("the page posted the approval %d times", n)
	}
	pending = getJSON[pendingApprovals](s, "/api/v1/approvals/pending?conversation_id="+conversationID(t, p))
	if len(pending.Approvals) != 0 {
		t.Errorf("pending approvals after the answer: %+v", pending.Approvals)
	}

	// Reject with a reason: the agent proposes a revised call.
	p.Send("Please clean up the old files.")
	p.WaitText(pendingApproval+" h3", "delete_file")
	p.WaitText(pendingApproval+" pre.args", "/srv/data")
	first := `.approval-card[data-approval-id="` + p.Attr(pendingApproval, "data-approval-id") + `"]`
	p.Click(first + ` [data-action="reject"]`)
	p.Type(first+" .reject-form textarea", "Only the scratch file, please.")
	p.CheckAccessible()
	p.Screenshot("reject-reason")
	p.Click(first + ` [data-action="submit-reject"]`)
	p.WaitText(first+" .card-result", "Rejected: Only the scratch file, please.")
	p.WaitText(webtest.LastTurn+" .act-tool.failed .tool-error", "Reason: Only the scratch file, please.")

	// The revised proposal is a new card; approve it.
	p.WaitText(pendingApproval, "revised proposal (1 rejected before)")
	p.WaitText(pendingApproval+" pre.args", "/tmp/scratch.txt")
	p.Screenshot("revised-proposal")
	p.Click(pendingApproval + ` [data-action="approve"]`)
	if got := receive(t, "the delete_file call", s.deleted); got != "/tmp/scratch.txt" {
		t.Errorf("delete_file ran on %q, want only the revised /tmp/scratch.txt", got)
	}
	p.WaitText(webtest.LastAnswer, "deleted only /tmp/scratch.txt")
	waitState(p, webtest.LastTurn, "completed")
	p.WaitText(webtest.LastTurn+" .act-tool:not(.failed) .tool-status", "done")
	if n := p.Count(webtest.LastTurn + " .approval-card"); n != 2 {
		t.Errorf("%d approval cards in the turn, want 2", n)
	}
	p.Screenshot("revised-approved")
	select {
	case got := <-s.deleted:
		t.Errorf("delete_file also ran on %q", got)
	default:
	}

	conv := s.conversation(p)
	if len(conv.Runs) != 2 || conv.Runs[0].Status != "completed" || conv.Runs[1].Status != "completed" {
		t.Errorf("stored runs: %+v", conv.Runs)
	}
	s.checkScript()
}

// pendingApprovals is GET /api/v1/approvals/pending.
type pendingApprovals struct {
	Approvals []struct {
		ID   string `json:"approval_id"`
		Tool string `json:"tool"`
	} `json:"approvals"`
}
