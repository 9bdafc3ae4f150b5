package nodes_test

import (
	"errors"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

// abandonScript proposes a call that needs approval on the first message
// and answers plainly on a later one.
const abandonScript = `{"steps": [
	{"match": {"node": "supervisor", "contains": "delete"}, "reply": {"tool_calls": [{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/a.txt"}}]}},
	{"match": {"node": "supervisor", "contains": "never mind"}, "reply": {"json": {"action": "ANSWER", "reasoning": "the user moved on"}}},
	{"match": {"node": "write"}, "reply": {"text": "Sure, what else?"}}
]}`

// park runs the first message of abandonScript, which waits for approval.
func (h *harness) park(t testing.TB, conv string) {
	t.Helper()
	r := h.run(t, conv, "delete /tmp/a.txt")
	if r.err != nil || last[*events.RunInterrupted](r) == nil || last[*events.ApprovalRequired](r) == nil {
		t.Fatalf("want a run parked on an approval, got %s, %v", r.trace(), r.err)
	}
}

func (h *harness) pending(t testing.TB, conv string) []events.Pending {
	t.Helper()
	p, err := h.agent.Pending(t.Context(), conv)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAbandonParkedApprovalStartsAFreshTurn(t *testing.T) {
	h := newHarness(t, abandonScript, nodes.Options{})
	h.park(t, "c1")
	if p := h.pending(t, "c1"); len(p) != 1 || p[0].Kind != events.PendingApproval {
		t.Fatalf("pending before abandon = %+v", p)
	}

	if err := h.agent.Abandon(t.Context(), "c1"); err != nil {
		t.Fatal(err)
	}
	if p := h.pending(t, "c1"); p == nil || len(p) != 0 {
		t.Errorf("pending after abandon = %#v, want an empty list", p)
	}
	snap, err := h.agent.State(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	// The state keeps the parked turn up to the interrupt: the user's
	// message and the proposed call, which never ran.
	if len(snap.Next) != 0 || len(snap.Pending) != 0 || roles(snap.State.Messages) != "user,assistant" ||
		len(snap.State.ToolResults) != 0 || len(snap.State.Approvals) != 0 {
		t.Errorf("after abandon: next %v, pending %+v, messages %s, results %+v, approvals %+v",
			snap.Next, snap.Pending, roles(snap.State.Messages), snap.State.ToolResults, snap.State.Approvals)
	}

	r := h.run(t, "c1", "never mind, something else")
	if r.err != nil {
		t.Fatalf("run after abandon: %s, %v", r.trace(), r.err)
	}
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:answer -supervisor
		+write response.chunk* -write +stream response.done -stream run.completed`)
	if len(*h.deleted) != 0 {
		t.Errorf("the tool that waited for approval ran: deleted %v", *h.deleted)
	}
	s := h.state(t, "c1")
	if s.Turn != 2 || roles(s.Messages) != "user,assistant,user,assistant" || s.FinalResponse != "Sure, what else?" {
		t.Errorf("fresh turn: turn %d, messages %s, final %q", s.Turn, roles(s.Messages), s.FinalResponse)
	}
	h.allConsumed(t)
}

func TestAbandonWithNothingPendingIsANoOp(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER", "reasoning": "small talk"}}},
		{"match": {"node": "write"}, "reply": {"text": "Hello."}}
	]}`, nodes.Options{})
	// A conversation that does not exist stays so.
	if err := h.agent.Abandon(t.Context(), "nobody"); err != nil {
		t.Errorf("abandon unknown conversation: %v", err)
	}
	if _, err := h.agent.State(t.Context(), "nobody"); !errors.Is(err, nodes.ErrNoConversation) {
		t.Errorf("state of unknown conversation after abandon: %v", err)
	}

	// A finished turn gets no new checkpoint.
	if r := h.run(t, "c1", "hi"); r.err != nil {
		t.Fatal(r.err)
	}
	before, err := h.agent.State(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.agent.Abandon(t.Context(), "c1"); err != nil {
		t.Errorf("abandon finished conversation: %v", err)
	}
	after, err := h.agent.State(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if after.CheckpointID != before.CheckpointID {
		t.Errorf("abandon wrote checkpoint %s over %s", after.CheckpointID, before.CheckpointID)
	}
	h.allConsumed(t)
}

func TestResumeAfterAbandonFindsNoApproval(t *testing.T) {
	h := newHarness(t, abandonScript, nodes.Options{})
	h.park(t, "c1")
	if err := h.agent.Abandon(t.Context(), "c1"); err != nil {
		t.Fatal(err)
	}
	r := h.resume(t, "c1", nodes.ApprovalDecision{Decision: events.DecisionApprove})
	if !errors.Is(r.err, nodes.ErrNoPendingApproval) || r.trace() != "run.failed" {
		t.Errorf("resume after abandon: %s, %v", r.trace(), r.err)
	}
	if len(*h.deleted) != 0 {
		t.Errorf("deleted %v after an abandoned approval", *h.deleted)
	}
}

// A process that dies after the cancel reached the checkpoint and before
// the run's end was recorded leaves the run to Continue: it ends
// cancelled, as it would have, and runs nothing.
func TestContinueAfterAbandonEndsCancelled(t *testing.T) {
	h := newHarness(t, abandonScript, nodes.Options{})
	h.park(t, "c1")
	if err := h.agent.Abandon(t.Context(), "c1"); err != nil {
		t.Fatal(err)
	}
	r := collect(h.agent.Continue(t.Context(), "c1"))
	if r.err != nil || r.trace() != "run.cancelled" {
		t.Errorf("continue after abandon: %s, %v", r.trace(), r.err)
	}
	if len(*h.deleted) != 0 {
		t.Errorf("deleted %v after an abandoned approval", *h.deleted)
	}
}
