package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// emailScript asks to approve send_email, then runs it with progress: the
// second progress event waits for gate. With replyLate, the page gets the
// approval's 200 only after the run has finished.
func emailScript(gate <-chan struct{}, replyLate bool) func(r *fakeRun) {
	return func(r *fakeRun) {
		r.emit("supervisor.decided", map[string]any{"action": "call_tool", "tools": []string{"send_email"}, "reasoning": "the user asked to email"})
		args := map[string]any{"to": "team@example.com", "subject": "Status", "body": "All green."}
		var ans map[string]any
		var ok bool
		if replyLate {
			var reply func()
			ans, reply, ok = r.approvalReplyLate("appr-1", "send_email", args)
			defer reply()
		} else {
			ans, ok = r.approval("appr-1", "send_email", args, 0)
		}
		if !ok {
			return
		}
		r.emit("approval.resolved", map[string]any{"approval_id": "appr-1", "decision": ans["decision"], "args": args, "reason": ""})
		r.emit("tool.start", map[string]any{"tool_call_id": "call-appr-1", "tool": "send_email", "source": "operator", "args": args})
		r.emit("tool.progress", map[string]any{"tool_call_id": "call-appr-1", "progress": 1, "total": 2, "message": "connecting"})
		if !r.await(gate) {
			return
		}
		r.emit("tool.progress", map[string]any{"tool_call_id": "call-appr-1", "progress": 2, "total": 2, "message": "sent"})
		r.emit("tool.complete", map[string]any{"tool_call_id": "call-appr-1", "tool": "send_email", "result": "queued as msg-42", "duration_ms": 840})
		r.answer("The email is on its way.")
	}
}

func TestApprovalApprove(t *testing.T) {
	gate := make(chan struct{})
	f := newContractFake(t, emailScript(gate, false))
	p := open(t, f)
	p.Send("Email the team")

	card := `.approval-card[data-approval-id="appr-1"]`
	p.WaitVisible(card)
	p.WaitText(card+" h3", "send_email")
	p.WaitText(card+" pre.args", `"to": "team@example.com"`)
	p.WaitText(webtest.LastTurn+" .turn-status", "Working")
	p.Screenshot("approval-card")

	// By keyboard: Approve is a button like any other.
	p.Do("focus Approve", chromedp.Focus(chromedp.CSS(card+` [data-action="approve"]`)))
	p.Enter()
	req := f.requestsTo("POST", "/api/v1/approvals/appr-1", 1)[0]
	jsonEqual(t, "the approval body", req.Body, `{"decision": "approve"}`)
	p.WaitText(card+" .card-result", "Approved")

	// The tool's progress shows as a bar.
	bar := webtest.LastTurn + ` .act-tool[data-tool-call-id="call-appr-1"] progress`
	p.WaitJS("progress 1 of 2", `(sel) => { const b = document.querySelector(sel); return b && b.value === 1 && b.max === 2 }`, bar)
	p.WaitText(webtest.LastTurn+" .progress-label", "1 / 2 — connecting")
	p.Screenshot("tool-progress")
	close(gate)

	p.WaitText(webtest.LastAnswer, "The email is on its way.")
	p.WaitJS("progress 2 of 2", `(sel) => { const b = document.querySelector(sel); return b && b.value === 2 }`, bar)
	p.WaitText(webtest.LastTurn+` .act-tool`, "done in 840 ms")
	p.WaitJS("the turn is completed", `() => document.querySelector("#transcript > li.turn:last-of-type").dataset.state === "completed"`)
	if n := f.count("POST", "/api/v1/approvals/appr-1"); n != 1 {
		t.Errorf("the page posted the approval %d times", n)
	}
}

func TestApprovalEditAndReject(t *testing.T) {
	f := newContractFake(t, func(r *fakeRun) {
		switch r.message {
		case "Email ops":
			ans, ok := r.approval("appr-e", "send_email", map[string]any{"to": "all@example.com", "subject": "Hi"}, 0)
			if !ok {
				return
			}
			r.emit("approval.resolved", map[string]any{"approval_id": "appr-e", "decision": ans["decision"], "args": ans["args"], "reason": ""})
			r.emit("tool.start", map[string]any{"tool_call_id": "call-appr-e", "tool": "send_email", "source": "operator", "args": ans["args"]})
			r.emit("tool.complete", map[string]any{"tool_call_id": "call-appr-e", "tool": "send_email", "result": "ok", "duration_ms": 5})
			r.answer("Sent to ops.")
		default:
			ans, ok := r.approval("appr-r", "delete_branch", map[string]any{"branch": "main"}, 1)
			if !ok {
				return
			}
			r.emit("approval.resolved", map[string]any{"approval_id": "appr-r", "decision": ans["decision"], "args": map[string]any{"branch": "main"}, "reason": ans["reason"]})
			r.emit("tool.error", map[string]any{"tool_call_id": "call-appr-r", "tool": "delete_branch", "error": fmt.Sprintf("rejected by the user: %s", ans["reason"])})
			r.answer("I left the branch alone.")
		}
	})
	p := open(t, f)

	// Edit: bad JSON is caught on the page; good JSON is sent as args.
	p.Send("Email ops")
	card := `.approval-card[data-approval-id="appr-e"]`
	p.Click(card + ` [data-action="edit"]`)
	p.WaitJS("the arguments editor has focus", `(sel) => document.activeElement === document.querySelector(sel)`, card+" .edit-form textarea")
	p.Fill(card+" .edit-form textarea", "{not json")
	p.Click(card + ` [data-action="submit-edit"]`)
	p.WaitText(card+" .card-error", "not valid JSON")
	p.Fill(card+" .edit-form textarea", `["a list"]`)
	p.Click(card + ` [data-action="submit-edit"]`)
	p.WaitText(card+" .card-error", "must be a JSON object")
	if n := f.count("POST", "/api/v1/approvals/appr-e"); n != 0 {
		t.Fatalf("the page posted invalid arguments (%d requests)", n)
	}
	p.Fill(card+" .edit-form textarea", `{"to": "ops@example.com", "subject": "Hi"}`)
	p.CheckAccessible()
	p.Screenshot("edit-arguments")
	p.Click(card + ` [data-action="submit-edit"]`)
	req := f.requestsTo("POST", "/api/v1/approvals/appr-e", 1)[0]
	jsonEqual(t, "the edit body", req.Body, `{"decision": "edit", "args": {"to": "ops@example.com", "subject": "Hi"}}`)
	p.WaitText(card+" .card-result", "edited arguments")
	p.WaitText(card+" pre.args", "ops@example.com")
	p.WaitText(webtest.LastAnswer, "Sent to ops.")

	// Reject, with a reason, in the same conversation.
	p.Send("Delete main")
	chat := f.requestsTo("POST", "/api/v1/chat", 2)[1]
	jsonEqual(t, "the second chat body", chat.Body, `{"message": "Delete main", "conversation_id": "conv-1"}`)
	card = `.approval-card[data-approval-id="appr-r"]`
	p.WaitText(card, "revised proposal (1 rejected before)")
	p.Click(card + ` [data-action="reject"]`)
	p.Type(card+" .reject-form textarea", "Never delete main.")
	p.CheckAccessible()
	p.Screenshot("reject-reason")
	p.Click(card + ` [data-action="submit-reject"]`)
	req = f.requestsTo("POST", "/api/v1/approvals/appr-r", 1)[0]
	jsonEqual(t, "the reject body", req.Body, `{"decision": "reject", "reason": "Never delete main."}`)
	p.WaitText(card+" .card-result", "Rejected: Never delete main.")
	p.WaitText(webtest.LastTurn+" .act-tool", "rejected by the user: Never delete main.")
	p.WaitText(webtest.LastAnswer, "I left the branch alone.")
}

const signupSchema = `{
	"type": "object",
	"properties": {
		"name": {"type": "string", "title": "Full name", "minLength": 2},
		"email": {"type": "string", "format": "email", "title": "Email", "description": "We send the invoice here."},
		"plan": {"type": "string", "title": "Plan", "enum": ["free", "pro", "team"], "enumNames": ["Free", "Pro", "Team"]},
		"seats": {"type": "integer", "title": "Seats", "minimum": 1, "maximum": 10, "default": 1},
		"newsletter": {"type": "boolean", "title": "Send me the newsletter", "default": false},
		"notes": {"type": "string", "title": "Notes", "description": "Anything else?"}
	},
	"required": ["name", "email", "plan", "seats"]
}`

func TestElicitationForm(t *testing.T) {
	f := newContractFake(t, func(r *fakeRun) {
		r.emit("tool.start", map[string]any{"tool_call_id": "call-1", "tool": "signup", "source": "mcp", "args": map[string]any{}})
		if r.message == "Sign me up" {
			// The run parks: its stream ends with run.interrupted, and the
			// page must come back through /stream after answering.
			ans, ok := r.elicit("elic-1", "Tell me how to set up your account.", signupSchema, true)
			if !ok {
				return
			}
			r.emit("elicitation.response", map[string]any{"elicitation_id": "elic-1", "action": ans["action"]})
			content, _ := ans["content"].(map[string]any)
			r.emit("tool.complete", map[string]any{"tool_call_id": "call-1", "tool": "signup", "result": "account created", "duration_ms": 30})
			r.answer(fmt.Sprintf("Welcome aboard, %v!", content["name"]))
			return
		}
		// The run waits on its open stream.
		ans, ok := r.elicit("elic-2", "Which plan?", `{"type": "object", "properties": {"plan": {"type": "string", "enum": ["free", "pro"]}}}`, false)
		if !ok {
			return
		}
		r.emit("elicitation.response", map[string]any{"elicitation_id": "elic-2", "action": ans["action"]})
		r.emit("tool.error", map[string]any{"tool_call_id": "call-1", "tool": "signup", "error": "the user declined"})
		r.answer("No account, then.")
	})
	p := open(t, f)
	p.Send("Sign me up")

	card := `.elicitation-card[data-elicitation-id="elic-1"]`
	p.WaitVisible(card)
	p.WaitText(card, "Tell me how to set up your account.")
	p.WaitText(webtest.LastTurn+" .turn-status", "Waiting for your input")

	// The form follows the schema, and every control has a label.
	type control struct {
		Tag, Type, Label, Min, Max, Step string
		Required, Checked                bool
		Options                          int
		Described                        string
	}
	got := webtest.Eval[[]control](p, `[...document.querySelectorAll('`+card+` form :is(input, select, textarea)')].map((c) => ({
		Tag: c.tagName.toLowerCase(), Type: c.type, Label: c.labels[0]?.textContent ?? "", Min: c.min ?? "", Max: c.max ?? "", Step: c.step ?? "",
		Required: c.required, Checked: !!c.checked, Options: c.options?.length ?? 0,
		Described: c.getAttribute("aria-describedby") ? document.getElementById(c.getAttribute("aria-describedby")).textContent : "",
	}))`)
	want := []control{
		{Tag: "input", Type: "text", Label: "Full name *", Required: true},
		{Tag: "input", Type: "email", Label: "Email *", Required: true, Described: "We send the invoice here."},
		{Tag: "select", Type: "select-one", Label: "Plan *", Required: true, Options: 4},
		{Tag: "input", Type: "number", Label: "Seats *", Min: "1", Max: "10", Step: "1", Required: true},
		{Tag: "input", Type: "checkbox", Label: "Send me the newsletter"},
		{Tag: "input", Type: "text", Label: "Notes", Described: "Anything else?"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("form controls:\n got %+v\nwant %+v", got, want)
	}
	if webtest.Eval[bool](p, `document.querySelector('`+card+` form').checkValidity()`) {
		t.Error("the empty form is valid; the required fields are not enforced")
	}
	p.CheckAccessible()
	p.Screenshot("elicitation-form")

	p.Type(card+` input[name="name"]`, "Ada Lovelace")
	p.Type(card+` input[name="email"]`, "ada@example.com")
	p.Fill(card+` select[name="plan"]`, "1") // the options' values are indexes into enum
	p.Fill(card+` input[name="seats"]`, "3")
	p.Click(card + ` input[name="newsletter"]`)
	p.Click(card + ` [data-action="accept"]`)

	req := f.requestsTo("POST", "/api/v1/elicitation/respond", 1)[0]
	jsonEqual(t, "the elicitation answer", req.Body, `{"elicitation_id": "elic-1", "action": "accept",
		"content": {"name": "Ada Lovelace", "email": "ada@example.com", "plan": "pro", "seats": 3, "newsletter": true}}`)

	// The run had parked (run.interrupted was seq 4): the page reattaches
	// after it.
	stream := f.requestsTo("GET", "/api/v1/conversations/conv-1/stream", 1)[0]
	if got := stream.Header.Get("Last-Event-ID"); got != "4" {
		t.Errorf("Last-Event-ID on reattaching = %q, want 4", got)
	}
	p.WaitText(webtest.LastAnswer, "Welcome aboard, Ada Lovelace!")
	p.WaitText(card+" .card-result", "Answered.")

	// Decline, on a run that waits on its open stream.
	p.Send("Sign me up again")
	card = `.elicitation-card[data-elicitation-id="elic-2"]`
	p.Click(card + ` [data-action="decline"]`)
	req = f.requestsTo("POST", "/api/v1/elicitation/respond", 2)[1]
	jsonEqual(t, "the decline", req.Body, `{"elicitation_id": "elic-2", "action": "decline"}`)
	p.WaitText(card+" .card-result", "Declined.")
	p.WaitText(webtest.LastAnswer, "No account, then.")
}

// A call a crash cut off is put to the person on the page: the card says
// the call may have run and offers run it again, skip it, or treat it as
// failed; the decision goes to POST /uncertain-calls/{id} and the page
// follows the run it resumes.
func TestUncertainCall(t *testing.T) {
	f := newContractFake(t, func(r *fakeRun) {
		r.emit("tool.start", map[string]any{"tool_call_id": "call-unc-1", "tool": "charge", "source": "mcp", "args": map[string]any{"amount": 12}})
		ans, ok := r.uncertain("unc-1", "charge", map[string]any{"amount": 12})
		if !ok {
			return
		}
		if ans["decision"] != "skip" {
			r.f.t.Errorf("decision %v, want skip", ans["decision"])
		}
		r.emit("uncertain_call.resolved", map[string]any{"uncertain_call_id": "unc-1", "tool_call_id": "call-unc-1", "decision": "skip"})
		r.emit("tool.error", map[string]any{"tool_call_id": "call-unc-1", "tool": "charge", "error": "Not run: the user chose to skip it."})
		r.answer("I did not charge the card again.")
	})
	p := open(t, f)
	p.Send("Charge the card")

	card := `.uncertain-card[data-uncertain-call-id="unc-1"]`
	p.WaitVisible(card)
	p.WaitText(card+" h3", "charge")
	p.WaitText(card, "may or may not have taken effect")
	p.WaitText(card+" pre.args", `"amount": 12`)
	p.WaitText(webtest.LastTurn+" .turn-status", "Waiting for your decision")
	for _, action := range []string{"retry", "skip", "fail"} {
		p.WaitVisible(card + ` [data-action="` + action + `"]`)
	}
	p.CheckAccessible()
	p.Screenshot("uncertain-call")

	p.Click(card + ` [data-action="skip"]`)
	req := f.requestsTo("POST", "/api/v1/uncertain-calls/unc-1", 1)[0]
	jsonEqual(t, "the decision", req.Body, `{"decision": "skip"}`)
	p.WaitText(card+" .card-result", "Skipped")
	p.WaitText(webtest.LastAnswer, "I did not charge the card again.")
	p.WaitText(webtest.LastTurn+" .act-approval:last-of-type", "The call that may have run: skipped")
}

// An approval with a deadline says by when to answer and what happens
// then; when the deadline passes unanswered (approval.expired), the card
// says it expired and with what outcome, and the approval.resolved that
// follows does not hide that.
func TestApprovalExpires(t *testing.T) {
	gate := make(chan struct{})
	args := map[string]any{"to": "team@example.com"}
	f := newContractFake(t, func(r *fakeRun) {
		r.emit("approval.required", map[string]any{"approval_id": "appr-x", "tool_call_id": "call-appr-x", "tool": "send_email", "args": args,
			"revision": 0, "expires_at": "2031-05-06T07:08:09Z", "on_expiry": "reject"})
		if !r.await(gate) {
			return
		}
		r.emit("approval.expired", map[string]any{"approval_id": "appr-x", "kind": "approval", "outcome": "reject", "expires_at": "2031-05-06T07:08:09Z"})
		r.emit("approval.resolved", map[string]any{"approval_id": "appr-x", "decision": "reject", "args": args,
			"reason": "expired: nobody answered before the deadline"})
		r.emit("tool.error", map[string]any{"tool_call_id": "call-appr-x", "tool": "send_email", "error": "Not run: the approval expired."})
		r.answer("Nobody approved the email in time, so I did not send it.")
	})
	p := open(t, f)
	p.Send("Email the team")

	card := `.approval-card[data-approval-id="appr-x"]`
	p.WaitVisible(card)
	p.WaitText(card+" .card-deadline", "Answer by")
	p.WaitText(card+" .card-deadline", "after that it will be rejected")
	p.CheckAccessible()
	p.Screenshot("approval-deadline")
	close(gate)

	p.WaitJS("the card expired", `(sel) => { const c = document.querySelector(sel); return c && c.dataset.state === "expired" && c.dataset.outcome === "reject" }`, card)
	p.WaitText(card+" .card-result", "with no answer: rejected")
	p.WaitText(webtest.LastAnswer, "Nobody approved the email in time")
	p.WaitText(webtest.LastTurn, "Approval expired with no answer: rejected")
	p.WaitText(card+" .card-result", "Expired at")
	p.Screenshot("approval-expired")
	if n := f.count("POST", "/api/v1/approvals/appr-x"); n != 0 {
		t.Errorf("the page answered an expired approval %d times", n)
	}
}

// TestApproveAll: when parallel sub-agents wait on an approval each, the
// turn offers "Approve all", which answers both in one request; once
// they are answered it goes away.
func TestApproveAll(t *testing.T) {
	f := newContractFake(t, func(r *fakeRun) {
		wa, wb := r.f.expect("appr-a", "approval", nil), r.f.expect("appr-b", "approval", nil)
		for _, id := range []string{"appr-a", "appr-b"} {
			r.emit("approval.required", map[string]any{"approval_id": id, "tool_call_id": "call-" + id, "tool": "delete_file",
				"args": map[string]any{"path": "/tmp/" + id}, "revision": 0, "namespace": "janitor:call-" + id})
		}
		for _, w := range []*fakeWait{wa, wb} {
			if _, ok := r.wait(w); !ok {
				return
			}
		}
		for _, id := range []string{"appr-a", "appr-b"} {
			r.emit("approval.resolved", map[string]any{"approval_id": id, "decision": "approve", "args": map[string]any{"path": "/tmp/" + id}, "reason": ""})
		}
		r.answer("Both cleaned up.")
	})
	p := open(t, f)
	p.Send("Clean both")

	all := webtest.LastTurn + ` [data-action="approve-all"]`
	p.WaitVisible(`.approval-card[data-approval-id="appr-b"]`)
	p.WaitVisible(all)
	p.WaitText(all, "Approve all (2)")
	p.Screenshot("approve-all")
	p.Click(all)
	c := f.onlyConversation()
	f.mu.Lock()
	runID := c.runs[0].id
	f.mu.Unlock()
	req := f.requestsTo("POST", "/api/v1/conversations/"+c.id+"/runs/"+runID+"/answers", 1)[0]
	jsonEqual(t, "the batch", req.Body, `{"answers": [{"approval_id": "appr-a", "decision": "approve"}, {"approval_id": "appr-b", "decision": "approve"}]}`)
	for _, id := range []string{"appr-a", "appr-b"} {
		p.WaitText(`.approval-card[data-approval-id="`+id+`"] .card-result`, "Approved")
	}
	p.WaitText(webtest.LastAnswer, "Both cleaned up.")
	p.WaitJS("Approve all is gone", `(sel) => document.querySelector(sel).hidden`, all)
	if n := f.count("POST", "/api/v1/approvals/appr-a") + f.count("POST", "/api/v1/approvals/appr-b"); n != 0 {
		t.Errorf("the page answered %d approvals one at a time too", n)
	}
}

// A tool's question with a deadline says by when to answer and what
// happens then; when the deadline passes unanswered
// (elicitation.expired), the card says it expired and with what
// outcome, and the elicitation.response that follows does not hide that.
func TestElicitationExpires(t *testing.T) {
	gate := make(chan struct{})
	f := newContractFake(t, func(r *fakeRun) {
		r.emit("tool.start", map[string]any{"tool_call_id": "call-q", "tool": "greet", "source": "mcp", "args": map[string]any{}})
		r.emit("elicitation.request", map[string]any{"elicitation_id": "elic-x", "source": "greet", "message": "What is your name?",
			"schema":     map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
			"expires_at": "2031-05-06T07:08:09Z", "on_expiry": "decline"})
		if !r.await(gate) {
			return
		}
		r.emit("elicitation.expired", map[string]any{"elicitation_id": "elic-x", "kind": "elicitation", "outcome": "decline", "expires_at": "2031-05-06T07:08:09Z"})
		r.emit("elicitation.response", map[string]any{"elicitation_id": "elic-x", "action": "decline"})
		r.emit("tool.complete", map[string]any{"tool_call_id": "call-q", "tool": "greet", "result": "the user would not say", "duration_ms": 5})
		r.answer("Nobody told me your name in time, so I greeted you without it.")
	})
	p := open(t, f)
	p.Send("Greet me by name")

	card := `.elicitation-card[data-elicitation-id="elic-x"]`
	p.WaitVisible(card)
	p.WaitText(card+" .card-deadline", "Answer by")
	p.WaitText(card+" .card-deadline", "after that it will be declined")
	p.CheckAccessible()
	close(gate)

	p.WaitJS("the card expired", `(sel) => { const c = document.querySelector(sel); return c && c.dataset.state === "expired" && c.dataset.outcome === "decline" }`, card)
	p.WaitText(card+" .card-result", "with no answer: declined")
	p.WaitText(webtest.LastAnswer, "Nobody told me your name in time")
	p.WaitText(webtest.LastTurn, "Input request expired with no answer: declined")
	if n := f.count("POST", "/api/v1/elicitation/respond"); n != 0 {
		t.Errorf("the page answered an expired question %d times", n)
	}
}

// A call that may have run with a deadline says by when to decide and
// what happens then; when the deadline passes undecided
// (uncertain_call.expired), the card says it expired and with what
// outcome, and the uncertain_call.resolved that follows does not hide
// that. A clarifying question that expired is told in the turn.
func TestUncertainCallExpires(t *testing.T) {
	gate := make(chan struct{})
	f := newContractFake(t, func(r *fakeRun) {
		r.emit("tool.uncertain", map[string]any{"uncertain_call_id": "unc-x", "tool_call_id": "call-x", "tool": "charge",
			"args": map[string]any{"note": "alpha"}, "expires_at": "2031-05-06T07:08:09Z", "on_expiry": "skip"})
		if !r.await(gate) {
			return
		}
		r.emit("uncertain_call.expired", map[string]any{"uncertain_call_id": "unc-x", "kind": "uncertain_call", "outcome": "skip", "expires_at": "2031-05-06T07:08:09Z"})
		r.emit("uncertain_call.resolved", map[string]any{"uncertain_call_id": "unc-x", "tool_call_id": "call-x", "decision": "skip"})
		r.emit("tool.error", map[string]any{"tool_call_id": "call-x", "tool": "charge", "error": "Not run: nobody decided in time."})
		r.emit("clarification.expired", map[string]any{"clarification_id": "clar-x", "kind": "clarification", "outcome": "continue", "expires_at": "2031-05-06T07:08:09Z"})
		r.answer("Nobody decided on the charge in time, so it was skipped.")
	})
	p := open(t, f)
	p.Send("Charge alpha")

	card := `.uncertain-card[data-uncertain-call-id="unc-x"]`
	p.WaitVisible(card)
	p.WaitText(card+" .card-deadline", "Answer by")
	p.WaitText(card+" .card-deadline", "after that it will be skipped")
	p.CheckAccessible()
	close(gate)

	p.WaitJS("the card expired", `(sel) => { const c = document.querySelector(sel); return c && c.dataset.state === "expired" && c.dataset.outcome === "skip" }`, card)
	p.WaitText(card+" .card-result", "with no answer: skipped")
	p.WaitText(webtest.LastAnswer, "Nobody decided on the charge in time")
	p.WaitText(webtest.LastTurn, "Nobody decided on the call that may have run in time: skipped")
	p.WaitText(webtest.LastTurn, "The question expired with no answer: the agent going on without your answer")
	if n := f.count("POST", "/api/v1/uncertain-calls/unc-x"); n != 0 {
		t.Errorf("the page decided on an expired call %d times", n)
	}
}
