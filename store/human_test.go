package store_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// A human request is shown as the API's item of its kind: these are the
// bytes GET /approvals/pending, GET /elicitation/pending and GET
// /clarifications/pending list.
func TestHumanRequestJSON(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	resolved := created.Add(time.Minute)
	for _, tc := range []struct {
		name string
		r    store.HumanRequest
		want string
	}{
		{"pending approval", store.HumanRequest{ID: "a1", Kind: events.PendingApproval, ConversationID: "c", RunID: "r", UserID: "alice",
			Status: store.HumanPending, CreatedAt: created,
			Approval: store.Approval{ToolCallID: "call-1", Tool: "write_file", Args: json.RawMessage(`{"p":1}`), Revision: 2}},
			`{"approval_id":"a1","conversation_id":"c","run_id":"r","tool_call_id":"call-1","tool":"write_file","args":{"p":1},` +
				`"revision":2,"status":"pending","created_at":"2026-01-02T03:04:05Z"}`},
		{"edited approval", store.HumanRequest{ID: "a1", Kind: events.PendingApproval, ConversationID: "c", RunID: "r",
			Status: store.HumanEdited, CreatedAt: created, ResolvedAt: &resolved,
			Approval: store.Approval{Tool: "t", Args: json.RawMessage(`{}`), Decision: events.DecisionEdit,
				EditedArgs: json.RawMessage(`{"p":2}`), Reason: "safer"}},
			`{"approval_id":"a1","conversation_id":"c","run_id":"r","tool_call_id":"","tool":"t","args":{},"revision":0,` +
				`"status":"edited","decision":"edit","edited_args":{"p":2},"reason":"safer","created_at":"2026-01-02T03:04:05Z",` +
				`"resolved_at":"2026-01-02T03:05:05Z"}`},
		{"accepted elicitation", store.HumanRequest{ID: "e1", Kind: events.PendingElicitation, ConversationID: "c", RunID: "r", UserID: "alice",
			Status: store.HumanAccepted, CreatedAt: created, ResolvedAt: &resolved,
			Elicitation: store.Elicitation{Source: "mcp:x", Message: "n?", Schema: json.RawMessage(`{"type":"object"}`),
				Content: json.RawMessage(`{"n":3}`)}},
			`{"elicitation_id":"e1","conversation_id":"c","run_id":"r","source":"mcp:x","message":"n?","schema":{"type":"object"},` +
				`"status":"accepted","content":{"n":3},"created_at":"2026-01-02T03:04:05Z","resolved_at":"2026-01-02T03:05:05Z"}`},
		{"pending clarification", store.HumanRequest{ID: "q1", Kind: events.PendingClarification, ConversationID: "c", RunID: "r",
			Status: store.HumanPending, CreatedAt: created, Clarification: store.Clarification{Question: "Which city?"}},
			`{"clarification_id":"q1","conversation_id":"c","run_id":"r","question":"Which city?","status":"pending",` +
				`"created_at":"2026-01-02T03:04:05Z"}`},
		{"answered clarification", store.HumanRequest{ID: "q1", Kind: events.PendingClarification, ConversationID: "c", RunID: "r",
			Status: store.HumanAnswered, CreatedAt: created, ResolvedAt: &resolved,
			Clarification: store.Clarification{Question: "Which city?", Answer: "Oslo"}},
			`{"clarification_id":"q1","conversation_id":"c","run_id":"r","question":"Which city?","status":"answered",` +
				`"answer":"Oslo","created_at":"2026-01-02T03:04:05Z","resolved_at":"2026-01-02T03:05:05Z"}`},
	} {
		got, err := json.Marshal(tc.r)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %s, %v\nwant %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := json.Marshal(store.HumanRequest{ID: "x"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a request without a kind marshals with %v, want ErrInvalid", err)
	}
}

func TestHumanStatusAnswered(t *testing.T) {
	for s, want := range map[store.HumanStatus]bool{
		store.HumanPending: false, store.HumanExpired: false, "": false,
		store.HumanApproved: true, store.HumanEdited: true, store.HumanRejected: true,
		store.HumanAccepted: true, store.HumanDeclined: true, store.HumanCancelled: true,
		store.HumanAnswered: true,
	} {
		if got := s.Answered(); got != want {
			t.Errorf("%q.Answered() = %v, want %v", s, got, want)
		}
	}
}

// An elicitation's action is recorded as its status and read back from
// it; a status that records none (pending, expired) reads as "".
func TestElicitationActionStatus(t *testing.T) {
	for _, tc := range []struct {
		a    events.ElicitAction
		want store.HumanStatus
	}{
		{events.ElicitAccept, store.HumanAccepted},
		{events.ElicitDecline, store.HumanDeclined},
		{events.ElicitCancel, store.HumanCancelled},
	} {
		if got := (store.ElicitationAnswer{Action: tc.a}).Status(); got != tc.want {
			t.Errorf("%s: status %q, want %q", tc.a, got, tc.want)
		}
		if got := store.ActionOf(tc.want); got != tc.a {
			t.Errorf("ActionOf(%q) = %q, want %q", tc.want, got, tc.a)
		}
	}
	for _, s := range []store.HumanStatus{store.HumanPending, store.HumanExpired, store.HumanApproved} {
		if got := store.ActionOf(s); got != "" {
			t.Errorf("ActionOf(%q) = %q, want none", s, got)
		}
	}
}

// An uncertain call's decision is recorded as its status and read back
// from it; a status that records none (pending, expired) reads as "".
func TestCallDecisionStatus(t *testing.T) {
	for _, tc := range []struct {
		d    events.CallDecision
		want store.HumanStatus
	}{
		{events.CallRetry, store.HumanRetried},
		{events.CallSkip, store.HumanSkipped},
		{events.CallFail, store.HumanFailed},
	} {
		a := store.CallAnswer{Decision: tc.d}
		if got := a.Status(); got != tc.want {
			t.Errorf("%s: status %q, want %q", tc.d, got, tc.want)
		}
		if err := a.Validate(); err != nil {
			t.Errorf("%s: %v", tc.d, err)
		}
		if got := store.DecisionOf(tc.want); got != tc.d {
			t.Errorf("DecisionOf(%q) = %q, want %q", tc.want, got, tc.d)
		}
	}
	for _, s := range []store.HumanStatus{store.HumanPending, store.HumanExpired, store.HumanApproved} {
		if got := store.DecisionOf(s); got != "" {
			t.Errorf("DecisionOf(%q) = %q, want none", s, got)
		}
	}
	if err := (store.CallAnswer{Decision: "later"}).Validate(); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("an unknown decision: %v, want ErrInvalid", err)
	}
}
