package nodes_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

const deleteScript = `{"steps": [
	{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/a.txt"}}]}},
	{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}},
	{"match": {"node": "write"}, "reply": {"text": "Done."}}
]}`

func (h *harness) resume(t testing.TB, conv string, d nodes.ApprovalDecision) run {
	t.Helper()
	return collect(h.agent.Resume(t.Context(), conv, d))
}

func TestApprovalApprove(t *testing.T) {
	h := newHarness(t, deleteScript, nodes.Options{})
	r := h.run(t, "c1", "delete /tmp/a.txt")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
		+execute_tool approval.required run.interrupted:approval`)
	req := last[*events.ApprovalRequired](r)
	if req.ApprovalID == "" || req.ToolCallID != "d1" || req.Tool != "delete_file" || string(req.Args) != `{"path":"/tmp/a.txt"}` || req.Revision != 0 {
		t.Errorf("approval.required = %+v", req)
	}
	if ri := last[*events.RunInterrupted](r); !slices.Equal(ri.ApprovalIDs, []string{req.ApprovalID}) {
		t.Errorf("run.interrupted = %+v", ri)
	}
	if len(*h.deleted) != 0 {
		t.Fatal("the tool ran before approval")
	}
	// A new message while the approval waits is refused.
	if r := h.run(t, "c1", "hello?"); !errors.Is(r.err, nodes.ErrApprovalPending) || r.trace() != "run.failed" {
		t.Errorf("run while pending: %s, %v", r.trace(), r.err)
	}
	// An unknown approval id is refused.
	if r := h.resume(t, "c1", nodes.ApprovalDecision{ApprovalID: "nope", Decision: events.DecisionApprove}); !errors.Is(r.err, nodes.ErrNoPendingApproval) {
		t.Errorf("unknown id: %v", r.err)
	}

	r = h.resume(t, "c1", nodes.ApprovalDecision{ApprovalID: req.ApprovalID, Decision: events.DecisionApprove})
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `approval.resolved:approve +execute_tool tool.start:delete_file tool.complete:delete_file -execute_tool
		+reflect -reflect +synthesize -synthesize +write response.chunk* -write +stream response.done -stream run.completed`)
	if !slices.Equal(*h.deleted, []string{"/tmp/a.txt"}) {
		t.Errorf("deleted = %v", *h.deleted)
	}
	s := h.state(t, "c1")
	if len(s.Approvals) != 1 || s.Approvals[0].Decision != events.DecisionApprove || s.Approvals[0].ApprovalID != req.ApprovalID {
		t.Errorf("approvals = %+v", s.Approvals)
	}
	// Answered: nothing pending any more.
	if r := h.resume(t, "c1", nodes.ApprovalDecision{Decision: events.DecisionApprove}); !errors.Is(r.err, nodes.ErrNoPendingApproval) {
		t.Errorf("second resume: %v", r.err)
	}
	h.allConsumed(t)
}

func TestApprovalEdit(t *testing.T) {
	h := newHarness(t, deleteScript, nodes.Options{})
	r := h.run(t, "c1", "delete /tmp/a.txt")
	req := last[*events.ApprovalRequired](r)
	if r := h.resume(t, "c1", nodes.ApprovalDecision{Decision: events.DecisionEdit, Args: json.RawMessage(`"x"`)}); !errors.Is(r.err, nodes.ErrInvalidInput) {
		t.Errorf("edit without an object: %v", r.err)
	}
	r = h.resume(t, "c1", nodes.ApprovalDecision{Decision: events.DecisionEdit, Args: json.RawMessage(`{"path": "/tmp/b.txt"}`)})
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := last[*events.ApprovalResolved](r)
	if res.ApprovalID != req.ApprovalID || res.Decision != events.DecisionEdit || string(res.Args) != `{"path": "/tmp/b.txt"}` {
		t.Errorf("approval.resolved = %+v", res)
	}
	if st := last[*events.ToolStart](r); !strings.Contains(string(st.Args), "/tmp/b.txt") {
		t.Errorf("tool.start = %+v", st)
	}
	if !slices.Equal(*h.deleted, []string{"/tmp/b.txt"}) {
		t.Errorf("deleted = %v", *h.deleted)
	}
	s := h.state(t, "c1")
	if s.Approvals[0].Decision != events.DecisionEdit || !strings.Contains(string(s.Approvals[0].EditedArgs), "b.txt") ||
		!strings.Contains(s.ToolResults[0].Content, "The user edited the arguments") {
		t.Errorf("approval %+v, result %q", s.Approvals[0], s.ToolResults[0].Content)
	}
	h.allConsumed(t)
}

func TestApprovalRejectAndRevise(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "d1", "name": "delete_file", "args": {"path": "/etc/passwd"}}]}},
		{"match": {"node": "supervisor", "tool_result": true}, "reply": {"json": {"action": "CALL_TOOL", "reasoning": "revised",
			"tool_calls": [{"tool": "delete_file", "args": {"path": "/tmp/cache"}}]}}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write"}, "reply": {"text": "Deleted the cache instead."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "free some disk")
	first := last[*events.ApprovalRequired](r)
	r = h.resume(t, "c1", nodes.ApprovalDecision{Decision: events.DecisionReject, Reason: "never touch /etc"})
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `approval.resolved:reject +execute_tool tool.error:delete_file -execute_tool +reflect -reflect
		+supervisor supervisor.thinking supervisor.decided:call_tool -supervisor +execute_tool approval.required run.interrupted:approval`)
	second := last[*events.ApprovalRequired](r)
	if second.Revision != 1 || second.ApprovalID == first.ApprovalID || !strings.Contains(string(second.Args), "/tmp/cache") {
		t.Errorf("revised approval.required = %+v (first %+v)", second, first)
	}
	// The supervisor read the reason.
	calls := h.model.Calls()
	if len(calls) != 2 {
		t.Fatalf("calls = %+v", calls)
	}
	s := h.state(t, "c1")
	if m := s.Messages[2]; m.Role != nodes.RoleTool || !strings.Contains(m.Content, "never touch /etc") {
		t.Errorf("rejection message = %+v", m)
	}
	r = h.resume(t, "c1", nodes.ApprovalDecision{Decision: events.DecisionApprove})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !slices.Equal(*h.deleted, []string{"/tmp/cache"}) {
		t.Errorf("deleted = %v", *h.deleted)
	}
	s = h.state(t, "c1")
	if len(s.Approvals) != 2 || s.Approvals[0].Reason != "never touch /etc" || s.Approvals[1].Revision != 1 || s.Rejections != 1 {
		t.Errorf("approvals %+v, rejections %d", s.Approvals, s.Rejections)
	}
	if s.FinalResponse != "Deleted the cache instead." {
		t.Errorf("final = %q", s.FinalResponse)
	}
	h.allConsumed(t)
}

func TestApprovalThreeRejectionsStop(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "CALL_TOOL", "reasoning": "try",
			"tool_calls": [{"tool": "delete_file", "args": {"path": "/data"}}]}}, "repeat": true},
		{"match": {"node": "write"}, "reply": {"text": "I stopped: you rejected all three proposals."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "clean up")
	for i, reason := range []string{"too broad", "still too broad", "no"} {
		if req := last[*events.ApprovalRequired](r); req.Revision != i {
			t.Fatalf("proposal %d has revision %d", i, req.Revision)
		}
		r = h.resume(t, "c1", nodes.ApprovalDecision{Decision: events.DecisionReject, Reason: reason})
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	if !strings.HasSuffix(r.trace(), "+execute_tool tool.error:delete_file -execute_tool +reflect -reflect +handle_blocked -handle_blocked +write response.chunk* -write +stream response.done -stream run.completed") {
		t.Errorf("last run: %s", r.trace())
	}
	s := h.state(t, "c1")
	if s.Rejections != 3 || len(s.Approvals) != 3 || s.Outcome != nodes.OutcomeBlocked || len(*h.deleted) != 0 {
		t.Errorf("rejections %d, approvals %d, outcome %q, deleted %v", s.Rejections, len(s.Approvals), s.Outcome, *h.deleted)
	}
	for _, want := range []string{"rejected each", "too broad", "still too broad", "rejected: no"} {
		if !strings.Contains(s.Brief.Instructions, want) {
			t.Errorf("blocked brief lacks %q:\n%s", want, s.Brief.Instructions)
		}
	}
	// Three supervisor calls and the writer: no fourth proposal.
	if n := len(h.model.Calls()); n != 4 {
		t.Errorf("%d model calls, want 4", n)
	}
	h.allConsumed(t)
}

// A decision the deadline made comes after approval.expired, and a
// rejection at the deadline tells the model the approval expired and
// nothing was done, not that the user rejected it.
func TestApprovalExpiredDecision(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/a.txt"}}]}},
		{"match": {"node": "supervisor", "tool_result": true}, "reply": {"json": {"action": "ANSWER"}}},
		{"match": {"node": "write"}, "reply": {"text": "Nobody approved it in time, so nothing was deleted."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "delete /tmp/a.txt")
	req := last[*events.ApprovalRequired](r)
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	r = h.resume(t, "c1", nodes.ApprovalDecision{Decision: events.DecisionReject, Reason: "expired",
		Expired: &events.ApprovalExpired{Outcome: events.ExpiryReject, ExpiresAt: at}})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if tr := r.trace(); !strings.HasPrefix(tr, "approval.expired approval.resolved:reject +execute_tool tool.error:delete_file") {
		t.Errorf("trace %s", tr)
	}
	if x := last[*events.ApprovalExpired](r); x.ApprovalID != req.ApprovalID || x.Kind != events.PendingApproval || !x.ExpiresAt.Equal(at) {
		t.Errorf("approval.expired = %+v", x)
	}
	if e := last[*events.ToolError](r); !strings.Contains(e.Error, "the approval expired") || !strings.Contains(e.Error, "2031-05-06T07:08:09Z") ||
		strings.Contains(e.Error, "The user rejected") {
		t.Errorf("the model reads %q", e.Error)
	}
	if len(*h.deleted) != 0 {
		t.Errorf("deleted = %v", *h.deleted)
	}
}
