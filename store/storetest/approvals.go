package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/testcheck"
	"github.com/trellis-ai/trellis/store"
)

func testApprovals(t *testing.T, s Record) {
	ctx := t.Context()
	c1, c2 := newConversation(t, s, alice), newConversation(t, s, alice)
	r1, r2 := startRun(t, s, c1, "one"), startRun(t, s, c2, "two")
	args := json.RawMessage(`{"path": "/etc/hosts", "mode": 420}`)
	a := newPending(t, s, c1, r2, store.NewHumanRequest{ID: "interrupt-7", RunID: r1.ID, Kind: events.PendingApproval,
		Approval: store.Approval{ToolCallID: "call-1", Tool: "write_file", Args: args, Revision: 2}},
		events.PendingElicitation, store.ElicitationAnswer{Action: events.ElicitCancel})
	noArgs := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r1.ID, Kind: events.PendingApproval, Approval: store.Approval{Tool: "list"}}))(t)
	if noArgs.ID == "" || string(noArgs.Approval.Args) != "{}" {
		t.Errorf("approval without id and args: %+v, want a fresh id and args {}", noArgs)
	}
	third := newApproval(t, s, r2, "delete")

	if got, want := pendingIDs(t, s, events.PendingApproval, ""), []string{a.ID, noArgs.ID, third.ID}; !reflect.DeepEqual(got, want) {
		t.Errorf("pending = %v, want %v, oldest first", got, want)
	}
	if got, want := pendingIDs(t, s, events.PendingApproval, c2.ID), []string{third.ID}; !reflect.DeepEqual(got, want) {
		t.Errorf("pending of %s = %v, want %v", c2.ID, got, want)
	}

	edited := json.RawMessage(`{"path":"/tmp/hosts"}`)
	res := must(s.ResolveHumanRequest(ctx, alice, a.ID, store.ApprovalAnswer{Decision: events.DecisionEdit, Args: edited, Reason: "safer"}))(t)
	if res.Status != store.HumanEdited || res.Approval.Decision != events.DecisionEdit || string(res.Approval.EditedArgs) != string(edited) ||
		string(res.Approval.Args) != string(args) || res.Approval.Reason != "safer" || res.ResolvedAt == nil {
		t.Errorf("ResolveApproval(edit) = %+v", res)
	} else {
		utc(t, "resolved", *res.ResolvedAt)
	}
	if got := must(s.GetHumanRequest(ctx, events.PendingApproval, alice, a.ID))(t); !reflect.DeepEqual(got, res) {
		t.Errorf("GetApproval = %+v\nwant %+v as resolved", got, res)
	}
	wantErr(t, "a second answer", second(s.ResolveHumanRequest(ctx, alice, a.ID, store.ApprovalAnswer{Decision: events.DecisionApprove})), store.ErrAlreadyResolved)
	if got := must(s.GetHumanRequest(ctx, events.PendingApproval, alice, a.ID))(t); !reflect.DeepEqual(got, res) {
		t.Errorf("a refused answer changed the approval: %+v", got)
	}
	rej := must(s.ResolveHumanRequest(ctx, alice, noArgs.ID, store.ApprovalAnswer{Decision: events.DecisionReject, Reason: "no", Args: edited}))(t)
	if rej.Status != store.HumanRejected || rej.Approval.Reason != "no" || rej.Approval.EditedArgs != nil {
		t.Errorf("ResolveApproval(reject) = %+v: want rejected, reason kept, args ignored", rej)
	}
	if ok := must(s.ResolveHumanRequest(ctx, alice, third.ID, store.ApprovalAnswer{Decision: events.DecisionApprove}))(t); ok.Status != store.HumanApproved {
		t.Errorf("ResolveApproval(approve) = %+v", ok)
	}
	if got := pendingIDs(t, s, events.PendingApproval, ""); len(got) != 0 {
		t.Errorf("pending after answering all = %v", got)
	}

	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"approval_id", "tool_call_id", "tool", "args", "revision", "status", "conversation_id", "run_id"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("approval JSON %s lacks %q", data, k)
		}
	}
}

// newPending creates in, which must carry its id and payload, in a run
// of conversation c, and checks that it comes back and reads back as
// given and pending; that as the other kind it can be neither read nor
// answered (with wrong); and that its id cannot be taken again by a
// request in run other.
func newPending(t *testing.T, s store.Store, c store.Conversation, other store.Run, in store.NewHumanRequest,
	otherKind events.PendingKind, wrong store.HumanAnswer) store.HumanRequest {
	t.Helper()
	ctx := t.Context()
	h := must(s.CreateHumanRequest(ctx, in))(t)
	want := store.HumanRequest{ID: in.ID, Kind: in.Kind, ConversationID: c.ID, RunID: in.RunID, UserID: c.UserID,
		Status: store.HumanPending, CreatedAt: h.CreatedAt, Approval: in.Approval, Elicitation: in.Elicitation}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("Create %s = %+v\nwant %+v", in.Kind, h, want)
	}
	utc(t, string(in.Kind), h.CreatedAt)
	if got := must(s.GetHumanRequest(ctx, in.Kind, c.UserID, h.ID))(t); !reflect.DeepEqual(got, h) {
		t.Errorf("Get %s = %+v\nwant %+v", in.Kind, got, h)
	}
	wantErr(t, fmt.Sprintf("a %s asked for as a %s", in.Kind, otherKind), second(s.GetHumanRequest(ctx, otherKind, c.UserID, h.ID)), store.ErrNotFound)
	wantErr(t, fmt.Sprintf("a %s answered as a %s", in.Kind, otherKind), second(s.ResolveHumanRequest(ctx, c.UserID, h.ID, wrong)), store.ErrNotFound)
	taken := in
	taken.RunID = other.ID
	wantErr(t, fmt.Sprintf("Create %s with a taken id", in.Kind), second(s.CreateHumanRequest(ctx, taken)), store.ErrConflict)
	return h
}

// pendingIDs lists the ids of alice's pending requests of kind in a
// conversation ("" for all of hers), as the store orders them.
func pendingIDs(t *testing.T, s store.Store, kind events.PendingKind, conversationID string) []string {
	t.Helper()
	var out []string
	for _, p := range allPending(t, s, kind, alice, conversationID) {
		out = append(out, p.ID)
	}
	return out
}

// resolveRace has n answers race for one pending record and checks that
// exactly one wins.
func resolveRace(t *testing.T, n int, resolve func(i int) error) (winner int) {
	t.Helper()
	winners := testcheck.Race(t, "answer", n, store.ErrAlreadyResolved, resolve)
	if len(winners) != 1 {
		t.Fatalf("%d concurrent answers: winners %v; want exactly one winner", n, winners)
	}
	return winners[0]
}

func testApprovalResolveConcurrent(t *testing.T, s Record) {
	a := newApproval(t, s, startRun(t, s, newConversation(t, s, alice), "go"), "deploy")
	decisions := []store.ApprovalAnswer{
		{Decision: events.DecisionApprove},
		{Decision: events.DecisionReject, Reason: "not now"},
		{Decision: events.DecisionEdit, Args: json.RawMessage(`{"env":"staging"}`)},
	}
	w := resolveRace(t, 8, func(i int) error {
		_, err := s.ResolveHumanRequest(t.Context(), alice, a.ID, decisions[i%3])
		return err
	})
	if got := must(s.GetHumanRequest(t.Context(), events.PendingApproval, alice, a.ID))(t); got.Approval.Decision != decisions[w%3].Decision || got.Approval.Reason != decisions[w%3].Reason {
		t.Errorf("stored %+v, want the winner's answer %+v", got, decisions[w%3])
	}
}

func testElicitations(t *testing.T, s Record) {
	ctx := t.Context()
	c1, c2 := newConversation(t, s, alice), newConversation(t, s, alice)
	r1, r2 := startRun(t, s, c1, "one"), startRun(t, s, c2, "two")
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	e := newPending(t, s, c1, r2, store.NewHumanRequest{ID: "elicit_1", RunID: r1.ID, Kind: events.PendingElicitation,
		Elicitation: store.Elicitation{Source: "mcp:calc", Message: "how many?", Schema: schema}},
		events.PendingApproval, store.ApprovalAnswer{Decision: events.DecisionApprove})
	e2 := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r2.ID, Kind: events.PendingElicitation, Elicitation: store.Elicitation{Message: "name?"}}))(t)
	if e2.ID == "" || string(e2.Elicitation.Schema) != "{}" {
		t.Errorf("elicitation without id and schema: %+v", e2)
	}
	e3 := newElicitation(t, s, r2, "colour?")
	if got, want := pendingIDs(t, s, events.PendingElicitation, c2.ID), []string{e2.ID, e3.ID}; !reflect.DeepEqual(got, want) {
		t.Errorf("pending of %s = %v, want %v", c2.ID, got, want)
	}
	if all := allPending(t, s, events.PendingElicitation, alice, ""); len(all) != 3 {
		t.Errorf("%d pending in all, want 3", len(all))
	}

	content := json.RawMessage(`{"n": 3}`)
	acc := must(s.ResolveHumanRequest(ctx, alice, e.ID, store.ElicitationAnswer{Action: events.ElicitAccept, Content: content}))(t)
	if acc.Status != store.HumanAccepted || string(acc.Elicitation.Content) != string(content) || acc.ResolvedAt == nil {
		t.Errorf("accept = %+v", acc)
	}
	if got := must(s.GetHumanRequest(ctx, events.PendingElicitation, alice, e.ID))(t); !reflect.DeepEqual(got, acc) {
		t.Errorf("GetElicitation = %+v\nwant %+v as resolved", got, acc)
	}
	wantErr(t, "a second answer", second(s.ResolveHumanRequest(ctx, alice, e.ID, store.ElicitationAnswer{Action: events.ElicitCancel})), store.ErrAlreadyResolved)
	dec := must(s.ResolveHumanRequest(ctx, alice, e2.ID, store.ElicitationAnswer{Action: events.ElicitDecline, Content: content}))(t)
	if dec.Status != store.HumanDeclined || dec.Elicitation.Content != nil {
		t.Errorf("decline = %+v: want declined, content ignored", dec)
	}
	if can := must(s.ResolveHumanRequest(ctx, alice, e3.ID, store.ElicitationAnswer{Action: events.ElicitCancel}))(t); can.Status != store.HumanCancelled {
		t.Errorf("cancel = %+v", can)
	}
	if all := allPending(t, s, events.PendingElicitation, alice, ""); len(all) != 0 {
		t.Errorf("pending after answering all: %+v", all)
	}
}

func testElicitationResolveConcurrent(t *testing.T, s Record) {
	e := newElicitation(t, s, startRun(t, s, newConversation(t, s, alice), "go"), "name?")
	answers := []store.ElicitationAnswer{
		{Action: events.ElicitAccept, Content: json.RawMessage(`{"name":"a"}`)},
		{Action: events.ElicitDecline},
		{Action: events.ElicitCancel},
	}
	w := resolveRace(t, 8, func(i int) error {
		_, err := s.ResolveHumanRequest(t.Context(), alice, e.ID, answers[i%3])
		return err
	})
	if got := must(s.GetHumanRequest(t.Context(), events.PendingElicitation, alice, e.ID))(t); got.Status != answers[w%3].Status() {
		t.Errorf("stored %+v, want the winner's answer %+v", got, answers[w%3])
	}
}

func testFinalRunExpiresPending(t *testing.T, s Record) {
	ctx := t.Context()
	for _, status := range []store.RunStatus{store.RunCompleted, store.RunCancelled, store.RunFailed} {
		r := startRun(t, s, newConversation(t, s, alice), "x")
		a, e := newApproval(t, s, r, "t"), newElicitation(t, s, r, "q")
		finish(t, s, r.ID, store.RunInterrupted, events.PendingApproval)
		if got := must(s.GetHumanRequest(ctx, events.PendingApproval, alice, a.ID))(t); got.Status != store.HumanPending {
			t.Errorf("an interrupted run's approval is %s, want pending: it is what the run waits for", got.Status)
		}
		finish(t, s, r.ID, status, "")
		if got := must(s.GetHumanRequest(ctx, events.PendingApproval, alice, a.ID))(t); got.Status != store.HumanExpired || got.ResolvedAt == nil {
			t.Errorf("approval after the run %s: %+v, want expired", status, got)
		}
		if got := must(s.GetHumanRequest(ctx, events.PendingElicitation, alice, e.ID))(t); got.Status != store.HumanExpired || got.ResolvedAt == nil {
			t.Errorf("elicitation after the run %s: %+v, want expired", status, got)
		}
		wantErr(t, "answering after the run ended", second(s.ResolveHumanRequest(ctx, alice, e.ID, store.ElicitationAnswer{Action: events.ElicitCancel})), store.ErrAlreadyResolved)
	}
}

// A clarifying question waits while its run is parked on it; the message
// that starts the conversation's next run answers it, in the same
// transaction; a run that is cancelled or superseded instead expires it.
func testClarifications(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r := startRun(t, s, c, "book a table")
	q := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{ID: "clar-1", RunID: r.ID, Kind: events.PendingClarification,
		Clarification: store.Clarification{Question: "Which city?"}}))(t)
	if q.Status != store.HumanPending || q.ConversationID != c.ID || q.UserID != alice || q.Clarification.Question != "Which city?" {
		t.Fatalf("created %+v", q)
	}
	wantErr(t, "the same id again", second(s.CreateHumanRequest(ctx, store.NewHumanRequest{ID: "clar-1", RunID: r.ID,
		Kind: events.PendingClarification, Clarification: store.Clarification{Question: "Which city?"}})), store.ErrConflict)
	wantErr(t, "no question", second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingClarification})), store.ErrInvalid)
	finish(t, s, r.ID, store.RunInterrupted, events.PendingClarification)

	pending := allPending(t, s, events.PendingClarification, alice, c.ID)
	if len(pending) != 1 || pending[0].ID != q.ID {
		t.Fatalf("pending clarifications %+v, want %s", pending, q.ID)
	}
	if got := allPending(t, s, events.PendingClarification, bob, ""); len(got) != 0 {
		t.Errorf("bob sees alice's clarifications: %+v", got)
	}
	if got := allPending(t, s, events.PendingApproval, alice, c.ID); len(got) != 0 {
		t.Errorf("a clarification is listed as an approval: %+v", got)
	}
	wantErr(t, "as another kind", second(s.GetHumanRequest(ctx, events.PendingApproval, alice, q.ID)), store.ErrNotFound)
	wantErr(t, "another user's", second(s.GetHumanRequest(ctx, events.PendingClarification, bob, q.ID)), store.ErrNotFound)

	answer := startRun(t, s, c, "Oslo, tonight")
	got := must(s.GetHumanRequest(ctx, events.PendingClarification, alice, q.ID))(t)
	if got.Status != store.HumanAnswered || got.Clarification.Answer != "Oslo, tonight" || got.ResolvedAt == nil {
		t.Errorf("after the next message: %+v, want answered with it", got)
	}
	if got := allPending(t, s, events.PendingClarification, alice, ""); len(got) != 0 {
		t.Errorf("still pending after the answer: %+v", got)
	}
	finish(t, s, answer.ID, store.RunCompleted, "")
	if got := must(s.GetHumanRequest(ctx, events.PendingClarification, alice, q.ID))(t); got.Status != store.HumanAnswered {
		t.Errorf("the answered question after the answering run ended: %+v", got)
	}

	// Cancelled while it waits: expired, and the next message answers nothing.
	r2 := startRun(t, s, c, "and a taxi")
	q2 := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r2.ID, Kind: events.PendingClarification,
		Clarification: store.Clarification{Question: "When?"}}))(t)
	finish(t, s, r2.ID, store.RunInterrupted, events.PendingClarification)
	finish(t, s, r2.ID, store.RunCancelled, "")
	startRun(t, s, c, "never mind")
	if got := must(s.GetHumanRequest(ctx, events.PendingClarification, alice, q2.ID))(t); got.Status != store.HumanExpired || got.Clarification.Answer != "" {
		t.Errorf("a cancelled run's question: %+v, want expired and unanswered", got)
	}

	// Superseded by an edit: expired, not answered by the edited message.
	c3 := newConversation(t, s, alice)
	r3 := startRun(t, s, c3, "plan a trip")
	finish(t, s, r3.ID, store.RunCompleted, "")
	r4 := startRun(t, s, c3, "somewhere warm")
	q4 := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r4.ID, Kind: events.PendingClarification,
		Clarification: store.Clarification{Question: "Which month?"}}))(t)
	finish(t, s, r4.ID, store.RunInterrupted, events.PendingClarification)
	must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c3.ID, UserMessage: "somewhere cold", Supersedes: r4.ID}))(t)
	if got := must(s.GetHumanRequest(ctx, events.PendingClarification, alice, q4.ID))(t); got.Status != store.HumanExpired {
		t.Errorf("a superseded run's question: %+v, want expired", got)
	}
}
