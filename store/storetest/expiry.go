package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// An approval keeps its deadline and the outcome chosen for it, shows
// them as the pending list does, and is decided by the deadline exactly
// as by a person: once, marked timed out, as the outcome's decision (or
// expired, for a cancel). Of the deadline and a person racing, exactly
// one wins. A request with no deadline has none; a deadline on another
// kind, or without a valid outcome, is refused.
func testApprovalDeadlines(t *testing.T, s Record) {
	ctx := t.Context()
	r := startRun(t, s, newConversation(t, s, alice), "go")
	at := time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("CET", 3600))
	want := at.UTC().Truncate(time.Microsecond)
	outcomes := []events.ExpiryOutcome{events.ExpiryReject, events.ExpiryApprove, events.ExpiryCancel}
	var ids []string
	for _, o := range outcomes {
		a := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingApproval,
			Approval: store.Approval{Tool: "deploy"}, ExpiresAt: &at, OnExpiry: o}))(t)
		if a.ExpiresAt == nil || !a.ExpiresAt.Equal(want) || a.OnExpiry != o || a.TimedOut {
			t.Errorf("created with a deadline (%s): %+v", o, a)
		}
		got := must(s.GetHumanRequest(ctx, events.PendingApproval, alice, a.ID))(t)
		if got.ExpiresAt == nil || !got.ExpiresAt.Equal(want) || got.OnExpiry != o || got.TimedOut {
			t.Errorf("read back with a deadline (%s): %+v, want expires %s", o, got, want)
		} else {
			utc(t, "expires_at", *got.ExpiresAt)
		}
		ids = append(ids, a.ID)
	}
	plain := newApproval(t, s, r, "list")
	if plain.ExpiresAt != nil || plain.OnExpiry != "" {
		t.Errorf("an approval without a deadline: %+v", plain)
	}
	pending := allPending(t, s, events.PendingApproval, alice, "")
	if len(pending) != 4 || pending[0].ExpiresAt == nil || !pending[0].ExpiresAt.Equal(want) || pending[3].ExpiresAt != nil {
		t.Fatalf("pending = %+v, want the deadlines of the first three", pending)
	}
	var fields map[string]any
	data, _ := json.Marshal(pending[0])
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	if fields["expires_at"] != want.Format(time.RFC3339Nano) || fields["on_expiry"] != "reject" {
		t.Errorf("a pending approval's JSON %s lacks its deadline", data)
	}
	var plainFields map[string]any
	if data, _ := json.Marshal(pending[3]); json.Unmarshal(data, &plainFields) != nil || plainFields["expires_at"] != nil || plainFields["on_expiry"] != nil {
		t.Errorf("an approval without a deadline shows one: %s", data)
	}

	for i, o := range outcomes {
		d := store.DeadlineAnswer{Outcome: o}
		got := must(s.ResolveHumanRequest(ctx, alice, ids[i], d))(t)
		if got.Status != d.Status() || got.Approval.Decision != d.Decision() || !got.TimedOut || got.ResolvedAt == nil {
			t.Errorf("decided by its deadline (%s): %+v", o, got)
		}
		wantErr(t, "a person after the deadline", second(s.ResolveHumanRequest(ctx, alice, ids[i], store.ApprovalAnswer{Decision: events.DecisionApprove})),
			store.ErrAlreadyResolved)
		wantErr(t, "the deadline twice", second(s.ResolveHumanRequest(ctx, alice, ids[i], d)), store.ErrAlreadyResolved)
	}
	if got := must(s.ResolveHumanRequest(ctx, alice, plain.ID, store.ApprovalAnswer{Decision: events.DecisionReject}))(t); got.TimedOut {
		t.Errorf("a person's answer is marked timed out: %+v", got)
	}

	raced := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingApproval,
		Approval: store.Approval{Tool: "deploy"}, ExpiresAt: &at, OnExpiry: events.ExpiryCancel}))(t)
	w := resolveRace(t, 8, func(i int) error {
		var ans store.HumanAnswer = store.ApprovalAnswer{Decision: events.DecisionApprove}
		if i%2 == 0 {
			ans = store.DeadlineAnswer{Outcome: events.ExpiryCancel}
		}
		_, err := s.ResolveHumanRequest(ctx, alice, raced.ID, ans)
		return err
	})
	if got := must(s.GetHumanRequest(ctx, events.PendingApproval, alice, raced.ID))(t); got.TimedOut != (w%2 == 0) {
		t.Errorf("stored %+v, want the winner's (%d) answer", got, w)
	}

	for name, n := range map[string]store.NewHumanRequest{
		"outcome without a deadline":  {RunID: r.ID, Kind: events.PendingApproval, Approval: store.Approval{Tool: "x"}, OnExpiry: events.ExpiryReject},
		"deadline without an outcome": {RunID: r.ID, Kind: events.PendingApproval, Approval: store.Approval{Tool: "x"}, ExpiresAt: &at},
		"unknown outcome":             {RunID: r.ID, Kind: events.PendingApproval, Approval: store.Approval{Tool: "x"}, ExpiresAt: &at, OnExpiry: "ignore"},
		"deadline on a question":      {RunID: r.ID, Kind: events.PendingClarification, Clarification: store.Clarification{Question: "?"}, ExpiresAt: &at, OnExpiry: events.ExpiryReject},
		"an elicitation approved":     {RunID: r.ID, Kind: events.PendingElicitation, ExpiresAt: &at, OnExpiry: events.ExpiryApprove},
	} {
		wantErr(t, name, second(s.CreateHumanRequest(ctx, n)), store.ErrInvalid)
	}
	wantErr(t, "an unknown outcome as an answer", second(s.ResolveHumanRequest(ctx, alice, raced.ID, store.DeadlineAnswer{Outcome: "ignore"})), store.ErrInvalid)
}

// An elicitation keeps its deadline as an approval does, shows it in the
// pending list, and is decided by it once: a decline as declined, a
// cancel as expired, both marked timed out. Of the deadline and the
// user's answer racing, exactly one wins.
func testElicitationDeadlines(t *testing.T, s Record) {
	ctx := t.Context()
	r := startRun(t, s, newConversation(t, s, alice), "go")
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	ask := func(o events.ExpiryOutcome) store.HumanRequest {
		t.Helper()
		return must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingElicitation,
			Elicitation: store.Elicitation{Source: "calc", Message: "how many?"}, ExpiresAt: &at, OnExpiry: o}))(t)
	}
	decline, cancel := ask(events.ExpiryDecline), ask(events.ExpiryCancel)
	plain := newElicitation(t, s, r, "colour?")
	pending := allPending(t, s, events.PendingElicitation, alice, "")
	if len(pending) != 3 || pending[0].ExpiresAt == nil || !pending[0].ExpiresAt.Equal(at) || pending[0].OnExpiry != events.ExpiryDecline ||
		pending[2].ExpiresAt != nil || pending[2].OnExpiry != "" {
		t.Fatalf("pending = %+v, want the deadlines of the first two", pending)
	}
	var fields map[string]any
	if data, _ := json.Marshal(pending[1]); json.Unmarshal(data, &fields) != nil || fields["expires_at"] != at.Format(time.RFC3339Nano) ||
		fields["on_expiry"] != "cancel" {
		t.Errorf("a pending elicitation's JSON %s lacks its deadline", data)
	}

	for _, c := range []struct {
		e    store.HumanRequest
		want store.HumanStatus
	}{{decline, store.HumanDeclined}, {cancel, store.HumanExpired}} {
		d := store.DeadlineAnswer{Of: events.PendingElicitation, Outcome: c.e.OnExpiry}
		got := must(s.ResolveHumanRequest(ctx, alice, c.e.ID, d))(t)
		if got.Status != c.want || !got.TimedOut || got.ResolvedAt == nil || got.Elicitation.Content != nil {
			t.Errorf("decided by its deadline (%s): %+v", c.e.OnExpiry, got)
		}
		if got := must(s.GetHumanRequest(ctx, events.PendingElicitation, alice, c.e.ID))(t); got.Status != c.want || !got.TimedOut {
			t.Errorf("read back after its deadline (%s): %+v", c.e.OnExpiry, got)
		}
		wantErr(t, "the user after the deadline", second(s.ResolveHumanRequest(ctx, alice, c.e.ID, store.ElicitationAnswer{Action: events.ElicitDecline})),
			store.ErrAlreadyResolved)
		wantErr(t, "the deadline twice", second(s.ResolveHumanRequest(ctx, alice, c.e.ID, d)), store.ErrAlreadyResolved)
	}
	if got := must(s.ResolveHumanRequest(ctx, alice, plain.ID, store.ElicitationAnswer{Action: events.ElicitDecline}))(t); got.TimedOut {
		t.Errorf("the user's decline is marked timed out: %+v", got)
	}

	raced := ask(events.ExpiryDecline)
	w := resolveRace(t, 8, func(i int) error {
		var ans store.HumanAnswer = store.ElicitationAnswer{Action: events.ElicitAccept, Content: json.RawMessage(`{"n":1}`)}
		if i%2 == 0 {
			ans = store.DeadlineAnswer{Of: events.PendingElicitation, Outcome: events.ExpiryDecline}
		}
		_, err := s.ResolveHumanRequest(ctx, alice, raced.ID, ans)
		return err
	})
	if got := must(s.GetHumanRequest(ctx, events.PendingElicitation, alice, raced.ID))(t); got.TimedOut != (w%2 == 0) {
		t.Errorf("stored %+v, want the winner's (%d) answer", got, w)
	}
	wantErr(t, "an approval's outcome for an elicitation",
		second(s.ResolveHumanRequest(ctx, alice, raced.ID, store.DeadlineAnswer{Of: events.PendingElicitation, Outcome: events.ExpiryApprove})), store.ErrInvalid)
}

// A clarifying question and an uncertain call keep their deadlines as an
// approval does, show them in the pending lists, and are decided by
// them once: a question's continue as answered with no answer, its
// cancel as expired; a call's skip and fail as those decisions; all
// marked timed out. An uncertain call never takes retry at its
// deadline. While a question its deadline decided waits for its run to
// take the outcome up, a new run on the conversation is refused
// (ErrRunActive) and its message does not answer the question; once
// the run has moved on, runs start again. A message before the
// deadline answers the question, and the deadline then loses.
func testClarificationAndCallDeadlines(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r := startRun(t, s, c, "book a table")
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	ask := func(o events.ExpiryOutcome) store.HumanRequest {
		t.Helper()
		return must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingClarification,
			Clarification: store.Clarification{Question: "Which city?"}, ExpiresAt: &at, OnExpiry: o}))(t)
	}
	call := func(o events.ExpiryOutcome) store.HumanRequest {
		t.Helper()
		return must(s.CreateHumanRequest(ctx, store.NewHumanRequest{ID: "key-" + string(o), RunID: r.ID, Kind: events.PendingUncertainCall,
			UncertainCall: store.UncertainCall{Tool: "charge"}, ExpiresAt: &at, OnExpiry: o}))(t)
	}
	goOn, cancel := ask(events.ExpiryContinue), ask(events.ExpiryCancel)
	skip, fail := call(events.ExpirySkip), call(events.ExpiryFail)
	for kind, n := range map[events.PendingKind]int{events.PendingClarification: 2, events.PendingUncertainCall: 2} {
		pending := allPending(t, s, kind, alice, c.ID)
		var fields map[string]any
		if data, _ := json.Marshal(pending[0]); len(pending) != n || json.Unmarshal(data, &fields) != nil ||
			fields["expires_at"] != at.Format(time.RFC3339Nano) || fields["on_expiry"] == nil {
			t.Errorf("pending %s: %+v lacks the deadlines", kind, pending)
		}
	}
	for _, tc := range []struct {
		h    store.HumanRequest
		want store.HumanStatus
	}{{goOn, store.HumanAnswered}, {cancel, store.HumanExpired}, {skip, store.HumanSkipped}, {fail, store.HumanFailed}} {
		d := store.DeadlineAnswer{Of: tc.h.Kind, Outcome: tc.h.OnExpiry}
		got := must(s.ResolveHumanRequest(ctx, alice, tc.h.ID, d))(t)
		if got.Status != tc.want || !got.TimedOut || got.ResolvedAt == nil || got.Clarification.Answer != "" {
			t.Errorf("decided by its deadline (%s %s): %+v", tc.h.Kind, tc.h.OnExpiry, got)
		}
		wantErr(t, "the deadline twice", second(s.ResolveHumanRequest(ctx, alice, tc.h.ID, d)), store.ErrAlreadyResolved)
	}
	wantErr(t, "a person after the deadline", second(s.ResolveHumanRequest(ctx, alice, skip.ID, store.CallAnswer{Decision: events.CallRetry})),
		store.ErrAlreadyResolved)
	for name, n := range map[string]store.NewHumanRequest{
		"a call retried at its deadline": {ID: "key-r", RunID: r.ID, Kind: events.PendingUncertainCall, UncertainCall: store.UncertainCall{Tool: "charge"},
			ExpiresAt: &at, OnExpiry: "retry"},
		"a question declined": {RunID: r.ID, Kind: events.PendingClarification, Clarification: store.Clarification{Question: "?"}, ExpiresAt: &at,
			OnExpiry: events.ExpiryDecline},
		"a call cancelling": {ID: "key-c", RunID: r.ID, Kind: events.PendingUncertainCall, UncertainCall: store.UncertainCall{Tool: "charge"},
			ExpiresAt: &at, OnExpiry: events.ExpiryCancel},
	} {
		wantErr(t, name, second(s.CreateHumanRequest(ctx, n)), store.ErrInvalid)
	}
	wantErr(t, "retry as a deadline's", second(s.ResolveHumanRequest(ctx, alice, fail.ID,
		store.DeadlineAnswer{Of: events.PendingUncertainCall, Outcome: "retry"})), store.ErrInvalid)

	// The run parks on the question its deadline decided: a message is
	// refused until the run has taken the outcome up.
	finish(t, s, r.ID, store.RunInterrupted, events.PendingClarification)
	wantErr(t, "a message while the deadline's outcome is pending",
		second(s.StartRun(ctx, store.NewRun{ConversationID: c.ID, UserID: alice, UserMessage: "Paris"})), store.ErrRunActive)
	must(s.ResumeRun(ctx, r.ID, "here"))(t)
	finish(t, s, r.ID, store.RunCompleted, "")
	r2 := must(s.StartRun(ctx, store.NewRun{ConversationID: c.ID, UserID: alice, UserMessage: "book again"}))(t)

	// A message before the deadline answers the question; the deadline
	// then finds it answered.
	later := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r2.ID, Kind: events.PendingClarification,
		Clarification: store.Clarification{Question: "Which city?"}, ExpiresAt: &at, OnExpiry: events.ExpiryContinue}))(t)
	finish(t, s, r2.ID, store.RunInterrupted, events.PendingClarification)
	must(s.StartRun(ctx, store.NewRun{ConversationID: c.ID, UserID: alice, UserMessage: "Paris"}))(t)
	wantErr(t, "the deadline after the message", second(s.ResolveHumanRequest(ctx, alice, later.ID,
		store.DeadlineAnswer{Of: events.PendingClarification, Outcome: events.ExpiryContinue})), store.ErrAlreadyResolved)
	if got := must(s.GetHumanRequest(ctx, events.PendingClarification, alice, later.ID))(t); got.Status != store.HumanAnswered || got.TimedOut ||
		got.Clarification.Answer != "Paris" {
		t.Errorf("the question the message answered: %+v", got)
	}
}
