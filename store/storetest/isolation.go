package storetest

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// records names one of each record, for the tables below.
type records struct {
	conversation, run, approval, elicitation string
}

// userCalls are the calls that take a user id and name a record, each
// with the ids and user given.
func userCalls(user string, id records) map[string]func(ctx context.Context, s store.Store) error {
	return map[string]func(context.Context, store.Store) error{
		"GetConversation": func(ctx context.Context, s store.Store) error {
			return second(s.GetConversation(ctx, user, id.conversation))
		},
		"DeleteConversation": func(ctx context.Context, s store.Store) error {
			return s.DeleteConversation(ctx, user, id.conversation)
		},
		"RunMessages": func(ctx context.Context, s store.Store) error {
			return second(s.RunMessages(ctx, user, id.run))
		},
		"StartRun": func(ctx context.Context, s store.Store) error {
			return second(s.StartRun(ctx, store.NewRun{UserID: user, ConversationID: id.conversation, UserMessage: "hi"}))
		},
		"StartRun superseding": func(ctx context.Context, s store.Store) error {
			return second(s.StartRun(ctx, store.NewRun{UserID: user, ConversationID: id.conversation, UserMessage: "hi", Supersedes: id.run}))
		},
		"GetRun": func(ctx context.Context, s store.Store) error {
			return second(s.GetRun(ctx, user, id.run))
		},
		"LatestRun": func(ctx context.Context, s store.Store) error {
			return second(s.LatestRun(ctx, user, id.conversation))
		},
		"ListRuns": func(ctx context.Context, s store.Store) error {
			return second(s.ListRuns(ctx, user, id.conversation, store.RunQuery{}))
		},
		"EventsAfter": func(ctx context.Context, s store.Store) error {
			return second(s.EventsAfter(ctx, user, id.run, 0, 0))
		},
		"GetApproval": func(ctx context.Context, s store.Store) error {
			return second(s.GetHumanRequest(ctx, events.PendingApproval, user, id.approval))
		},
		"PendingApprovals": func(ctx context.Context, s store.Store) error {
			return second(s.PendingHumanRequests(ctx, events.PendingApproval, user, id.conversation, store.Page{}))
		},
		"ResolveApproval": func(ctx context.Context, s store.Store) error {
			return second(s.ResolveHumanRequest(ctx, user, id.approval, store.ApprovalAnswer{Decision: events.DecisionApprove}))
		},
		"GetElicitation": func(ctx context.Context, s store.Store) error {
			return second(s.GetHumanRequest(ctx, events.PendingElicitation, user, id.elicitation))
		},
		"PendingElicitations": func(ctx context.Context, s store.Store) error {
			return second(s.PendingHumanRequests(ctx, events.PendingElicitation, user, id.conversation, store.Page{}))
		},
		"ResolveElicitation": func(ctx context.Context, s store.Store) error {
			return second(s.ResolveHumanRequest(ctx, user, id.elicitation, store.ElicitationAnswer{Action: events.ElicitCancel}))
		},
	}
}

// testOtherUsersIDs: bob naming alice's records gets ErrNotFound from
// every call, and alice's records stay as they were.
func testOtherUsersIDs(t *testing.T, s Record) {
	c, r, a, e := busy(t, s, alice)
	newConversation(t, s, bob) // bob has data of his own
	before := take(t, s, alice, c.ID)
	calls := userCalls(bob, records{c.ID, r.ID, a.ID, e.ID})
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		call := calls[name]
		wantErr(t, name+" with another user's ids", call(t.Context(), s), store.ErrNotFound)
	}
	sameSnapshot(t, "another user's calls", before, take(t, s, alice, c.ID))
	ctx := t.Context()
	if p := must(s.ListConversations(ctx, bob, store.Page{}))(t); len(p.Conversations) != 1 || p.Conversations[0].UserID != bob {
		t.Errorf("bob lists %+v, want his one conversation", p.Conversations)
	}
	if p := allPending(t, s, events.PendingApproval, bob, ""); len(p) != 0 {
		t.Errorf("bob's pending approvals = %+v, want none", p)
	}
	if p := allPending(t, s, events.PendingElicitation, bob, ""); len(p) != 0 {
		t.Errorf("bob's pending elicitations = %+v, want none", p)
	}
}

func testUnknownIDs(t *testing.T, s Record) {
	c, _, _, _ := busy(t, s, alice)
	before := take(t, s, alice, c.ID)
	const nope = "0190e3a4-0000-7000-8000-000000000000"
	calls := userCalls(alice, records{nope, nope, nope, nope})
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		call := calls[name]
		wantErr(t, name+" with unknown ids", call(t.Context(), s), store.ErrNotFound)
	}
	// A known conversation with an unknown run to supersede.
	wantErr(t, "StartRun superseding an unknown run", second(s.StartRun(t.Context(), store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "x", Supersedes: nope})), store.ErrNotFound)
	for name, call := range map[string]func(ctx context.Context) error{
		"AppendEvent": func(ctx context.Context) error {
			return second(s.AppendEvent(ctx, store.NewEvent{RunID: nope, Type: "x", Data: json.RawMessage(`{}`)}))
		},
		"FinishRun": func(ctx context.Context) error {
			return second(s.FinishRun(ctx, nope, store.RunEnd{Status: store.RunCompleted}))
		},
		"ResumeRun": func(ctx context.Context) error { return second(s.ResumeRun(ctx, nope, "p")) },
		"AddMessage": func(ctx context.Context) error {
			return second(s.AddMessage(ctx, store.NewMessage{RunID: nope, Role: store.RoleUser}))
		},
		"CreateApproval": func(ctx context.Context) error {
			return second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: nope, Kind: events.PendingApproval, Approval: store.Approval{Tool: "x"}}))
		},
		"CreateElicitation": func(ctx context.Context) error {
			return second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: nope, Kind: events.PendingElicitation}))
		},
	} {
		wantErr(t, name+" with an unknown run", call(t.Context()), store.ErrNotFound)
	}
	sameSnapshot(t, "calls with unknown ids", before, take(t, s, alice, c.ID))
}

// testInvalidInput: every call refused with ErrInvalid leaves the store as
// it was, and a later event still gets the next number.
func testInvalidInput(t *testing.T, s Record) {
	ctx := t.Context()
	c, r, a, e := busy(t, s, alice)
	if _, err := s.ResumeRun(ctx, r.ID, "p"); err != nil { // running, so events and finishes apply
		t.Fatal(err)
	}
	before := take(t, s, alice, c.ID)
	event := func(typ, data string) error {
		return second(s.AppendEvent(ctx, store.NewEvent{RunID: r.ID, Type: typ, Data: json.RawMessage(data)}))
	}
	wantErrs(t, "", map[string]error{
		"CreateConversation without user":   second(s.CreateConversation(ctx, store.NewConversation{Title: "x"})),
		"StartRun without message":          second(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID})),
		"StartRun without conversation":     second(s.StartRun(ctx, store.NewRun{UserID: alice, UserMessage: "x"})),
		"StartRun without user":             second(s.StartRun(ctx, store.NewRun{ConversationID: c.ID, UserMessage: "x"})),
		"FinishRun as running":              second(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunRunning})),
		"FinishRun as nonsense":             second(s.FinishRun(ctx, r.ID, store.RunEnd{Status: "paused"})),
		"FinishRun interrupted, no reason":  second(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunInterrupted})),
		"FinishRun interrupted, bad reason": second(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunInterrupted, Reason: "boredom"})),
		"FinishRun completed with reason":   second(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted, Reason: events.PendingApproval})),
		"AppendEvent without type":          event("", `{}`),
		"AppendEvent of an array":           event("x", `[1]`),
		"AppendEvent of a string":           event("x", `"s"`),
		"AppendEvent of nothing":            event("x", ``),
		"AppendEvent of broken JSON":        event("x", `{"a":`),
		"AppendEvent of two objects":        event("x", `{}{}`),
		"AppendEvent of several lines":      event("x", "{\n\"a\":1}"),
		"AppendEvent with a CR":             event("x", "{\"a\":1}\r"),
		"AddMessage with bad role":          second(s.AddMessage(ctx, store.NewMessage{RunID: r.ID, Role: "tool"})),
		"AddMessage with bad citations":     second(s.AddMessage(ctx, store.NewMessage{RunID: r.ID, Role: store.RoleAssistant, Citations: json.RawMessage(`[`)})),
		"CreateApproval with array args":    second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingApproval, Approval: store.Approval{Tool: "x", Args: json.RawMessage(`[]`)}})),
		"CreateApproval without tool":       second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingApproval})),
		"CreateElicitation, schema array":   second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingElicitation, Elicitation: store.Elicitation{Schema: json.RawMessage(`[]`)}})),
		"ResolveApproval, bad decision":     second(s.ResolveHumanRequest(ctx, alice, a.ID, store.ApprovalAnswer{Decision: "maybe"})),
		"ResolveApproval, edit no args":     second(s.ResolveHumanRequest(ctx, alice, a.ID, store.ApprovalAnswer{Decision: events.DecisionEdit})),
		"ResolveApproval, edit bad args":    second(s.ResolveHumanRequest(ctx, alice, a.ID, store.ApprovalAnswer{Decision: events.DecisionEdit, Args: json.RawMessage(`"x"`)})),
		"ResolveElicitation, bad action":    second(s.ResolveHumanRequest(ctx, alice, e.ID, store.ElicitationAnswer{Action: "ignore"})),
		"ResolveElicitation, bad content":   second(s.ResolveHumanRequest(ctx, alice, e.ID, store.ElicitationAnswer{Action: events.ElicitAccept, Content: json.RawMessage(`[1]`)})),
		"CreateHumanRequest without kind":   second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Approval: store.Approval{Tool: "x"}})),
		"CreateHumanRequest, unknown kind":  second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: "question"})),
		"GetHumanRequest, unknown kind":     second(s.GetHumanRequest(ctx, "question", alice, a.ID)),
		"PendingHumanRequests, no kind":     second(s.PendingHumanRequests(ctx, "", alice, "", store.Page{})),
		"ResolveHumanRequest, no answer":    second(s.ResolveHumanRequest(ctx, alice, a.ID, nil)),
		"ListConversations, limit -1":       second(s.ListConversations(ctx, alice, store.Page{Limit: -1})),
		"ListConversations, bad cursor":     second(s.ListConversations(ctx, alice, store.Page{Cursor: "not-a-cursor"})),
		"ListRuns, limit -1":                second(s.ListRuns(ctx, alice, c.ID, store.RunQuery{Limit: -1})),
		"ListRuns, event limit -1":          second(s.ListRuns(ctx, alice, c.ID, store.RunQuery{EventLimit: -1})),
		"ListRuns, bad cursor":              second(s.ListRuns(ctx, alice, c.ID, store.RunQuery{Cursor: "not-a-cursor"})),
		"EventsAfter, limit -1":             second(s.EventsAfter(ctx, alice, r.ID, 0, -1)),
	}, store.ErrInvalid)
	sameSnapshot(t, "invalid calls", before, take(t, s, alice, c.ID))
	if ev := appendEvent(t, s, r, "node.start"); ev.Seq != r.LastSeq+1 {
		t.Errorf("after refused appends, seq %d, want %d: no number was used up", ev.Seq, r.LastSeq+1)
	}
}
