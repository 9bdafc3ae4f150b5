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

// badText is text no backend may keep: a NUL character, bytes that are
// not UTF-8 (a lone continuation byte, 0xff, a truncated sequence).
var badText = map[string]string{
	"NUL":            "a\x00b",
	"only NUL":       "\x00",
	"0xff":           "a\xffb",
	"continuation":   "\x80",
	"truncated rune": "caf\xc3",
}

// testUnstorableIDs: an id that is not valid text names nothing, on every
// backend alike: every call naming one gets ErrNotFound and changes
// nothing.
func testUnstorableIDs(t *testing.T, s Record) {
	ctx := t.Context()
	c, r, a, e := busy(t, s, alice)
	before := take(t, s, alice, c.ID)
	for _, name := range slices.Sorted(maps.Keys(badText)) {
		bad := badText[name]
		t.Run(name, func(t *testing.T) {
			calls := userCalls(alice, records{bad, bad, bad, bad})
			// A user who cannot exist, naming records that do.
			for call, fn := range userCalls(bad, records{c.ID, r.ID, a.ID, e.ID}) {
				calls[call+" by a user who cannot exist"] = fn
			}
			for call, fn := range runCalls(bad) {
				calls[call] = fn
			}
			calls["StartRun superseding, known conversation"] = func(ctx context.Context, s store.Store) error {
				return second(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "x", Supersedes: bad}))
			}
			for _, call := range slices.Sorted(maps.Keys(calls)) {
				wantErr(t, call+" naming "+name, calls[call](ctx, s), store.ErrNotFound)
			}
			// Lists of a user who cannot exist are empty.
			if p, err := s.ListConversations(ctx, bad, store.Page{}); err != nil || len(p.Conversations) != 0 {
				t.Errorf("ListConversations of a user %q = %+v, %v; want none", bad, p, err)
			}
			if as, err := s.PendingHumanRequests(ctx, events.PendingApproval, bad, "", store.Page{}); err != nil || len(as.Requests) != 0 {
				t.Errorf("PendingApprovals of a user %q = %+v, %v; want none", bad, as, err)
			}
			if es, err := s.PendingHumanRequests(ctx, events.PendingElicitation, bad, "", store.Page{}); err != nil || len(es.Requests) != 0 {
				t.Errorf("PendingElicitations of a user %q = %+v, %v; want none", bad, es, err)
			}
		})
	}
	sameSnapshot(t, "calls naming ids that cannot exist", before, take(t, s, alice, c.ID))
	if n := len(must(s.ListConversations(ctx, alice, store.Page{}))(t).Conversations); n != 1 {
		t.Errorf("alice has %d conversations, want the one she had", n)
	}
}

// runCalls are the calls only the process running a run makes, naming
// the run by id.
func runCalls(runID string) map[string]func(ctx context.Context, s store.Store) error {
	return map[string]func(context.Context, store.Store) error{
		"AppendEvent": func(ctx context.Context, s store.Store) error {
			return second(s.AppendEvent(ctx, store.NewEvent{RunID: runID, Type: "x", Data: json.RawMessage(`{}`)}))
		},
		"FinishRun": func(ctx context.Context, s store.Store) error {
			return second(s.FinishRun(ctx, runID, store.RunEnd{Status: store.RunCompleted}))
		},
		"ResumeRun": func(ctx context.Context, s store.Store) error { return second(s.ResumeRun(ctx, runID, "p")) },
		"AddMessage": func(ctx context.Context, s store.Store) error {
			return second(s.AddMessage(ctx, store.NewMessage{RunID: runID, Role: store.RoleAssistant, Content: "x"}))
		},
		"CreateApproval": func(ctx context.Context, s store.Store) error {
			return second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: runID, Kind: events.PendingApproval, Approval: store.Approval{Tool: "x"}}))
		},
		"CreateElicitation": func(ctx context.Context, s store.Store) error {
			return second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: runID, Kind: events.PendingElicitation}))
		},
	}
}

// testUnstorableText: writing text that is not valid UTF-8 or holds a NUL
// is ErrInvalid on every backend, and changes nothing.
func testUnstorableText(t *testing.T, s Record) {
	ctx := t.Context()
	c, r, a, e := busy(t, s, alice)
	if _, err := s.ResumeRun(ctx, r.ID, "p"); err != nil { // running, so events and finishes apply
		t.Fatal(err)
	}
	before := take(t, s, alice, c.ID)
	for _, name := range slices.Sorted(maps.Keys(badText)) {
		bad := badText[name]
		badJSON := json.RawMessage(`{"a":"` + bad + `"}`)
		if name == "NUL" || name == "only NUL" {
			// A NUL can only be escaped in JSON, and the escape is kept
			// (testJSONEscapesKept); a raw one is not JSON.
			badJSON = json.RawMessage("{\"a\":\"\x00\"}")
		}
		run := func(nr store.NewRun) error {
			if nr.UserID == "" {
				nr.UserID = alice
			}
			if nr.ConversationID == "" && nr.NewConversation == nil {
				nr.ConversationID = c.ID
			}
			if nr.UserMessage == "" {
				nr.UserMessage = "x"
			}
			return second(s.StartRun(ctx, nr))
		}
		event := func(ne store.NewEvent) error {
			ne.RunID = r.ID
			if ne.Type == "" {
				ne.Type = "x"
			}
			if ne.Data == nil {
				ne.Data = json.RawMessage(`{}`)
			}
			return second(s.AppendEvent(ctx, ne))
		}
		t.Run(name, func(t *testing.T) {
			wantErrs(t, " with "+name, map[string]error{
				"CreateConversation, title":      second(s.CreateConversation(ctx, store.NewConversation{UserID: alice, Title: bad})),
				"CreateConversation, user":       second(s.CreateConversation(ctx, store.NewConversation{UserID: bad})),
				"StartRun, message":              run(store.NewRun{UserMessage: bad}),
				"StartRun, request id":           run(store.NewRun{RequestID: bad}),
				"StartRun, owner":                run(store.NewRun{Owner: bad}),
				"StartRun, checkpoint id":        run(store.NewRun{CheckpointID: bad}),
				"StartRun in a new conversation": run(store.NewRun{NewConversation: &store.NewConversation{UserID: alice, Title: bad}}),
				"StartRun in a new one, message": run(store.NewRun{NewConversation: &store.NewConversation{UserID: alice}, UserMessage: bad}),
				"AddMessage, content":            second(s.AddMessage(ctx, store.NewMessage{RunID: r.ID, Role: store.RoleAssistant, Content: bad})),
				"AddMessage, citations":          second(s.AddMessage(ctx, store.NewMessage{RunID: r.ID, Role: store.RoleAssistant, Citations: badJSON})),
				"AddMessage, meta":               second(s.AddMessage(ctx, store.NewMessage{RunID: r.ID, Role: store.RoleAssistant, Meta: badJSON})),
				"AppendEvent, type":              event(store.NewEvent{Type: bad}),
				"AppendEvent, data":              event(store.NewEvent{Data: badJSON}),
				"AppendEvent, owner":             event(store.NewEvent{Owner: bad}),
				"FinishRun, owner":               second(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted, Owner: bad})),
				"ResumeRun, owner":               second(s.ResumeRun(ctx, r.ID, bad)),
				"CreateApproval, id":             second(s.CreateHumanRequest(ctx, store.NewHumanRequest{ID: bad, RunID: r.ID, Kind: events.PendingApproval, Approval: store.Approval{Tool: "x"}})),
				"CreateApproval, tool":           second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingApproval, Approval: store.Approval{Tool: bad}})),
				"CreateApproval, tool call id":   second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingApproval, Approval: store.Approval{Tool: "x", ToolCallID: bad}})),
				"CreateApproval, args":           second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingApproval, Approval: store.Approval{Tool: "x", Args: badJSON}})),
				"ResolveApproval, reason":        second(s.ResolveHumanRequest(ctx, alice, a.ID, store.ApprovalAnswer{Decision: events.DecisionReject, Reason: bad})),
				"ResolveApproval, edit reason":   second(s.ResolveHumanRequest(ctx, alice, a.ID, store.ApprovalAnswer{Decision: events.DecisionEdit, Args: json.RawMessage(`{}`), Reason: bad})),
				"ResolveApproval, edited args":   second(s.ResolveHumanRequest(ctx, alice, a.ID, store.ApprovalAnswer{Decision: events.DecisionEdit, Args: badJSON})),
				"CreateElicitation, id":          second(s.CreateHumanRequest(ctx, store.NewHumanRequest{ID: bad, RunID: r.ID, Kind: events.PendingElicitation})),
				"CreateElicitation, source":      second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingElicitation, Elicitation: store.Elicitation{Source: bad}})),
				"CreateElicitation, message":     second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingElicitation, Elicitation: store.Elicitation{Message: bad}})),
				"CreateElicitation, schema":      second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingElicitation, Elicitation: store.Elicitation{Schema: badJSON}})),
				"ResolveElicitation, content":    second(s.ResolveHumanRequest(ctx, alice, e.ID, store.ElicitationAnswer{Action: events.ElicitAccept, Content: badJSON})),
			}, store.ErrInvalid)
		})
	}
	sameSnapshot(t, "writes of text that cannot be stored", before, take(t, s, alice, c.ID))
	if n := len(must(s.ListConversations(ctx, alice, store.Page{}))(t).Conversations); n != 1 {
		t.Errorf("alice has %d conversations, want the one she had", n)
	}
	if ev := appendEvent(t, s, r, "node.start"); ev.Seq != before.Runs[1].LastSeq+1 {
		t.Errorf("after refused appends, seq %d, want %d: no number was used up", ev.Seq, before.Runs[1].LastSeq+1)
	}
}

// testJSONEscapesKept: JSON is kept byte for byte on every backend, also
// with escapes of characters text cannot hold (\u0000) and of lone
// surrogates.
func testJSONEscapesKept(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r := startRun(t, s, c, "escapes")
	const obj = `{"nul":"a\u0000b","lone":"\ud800","fine":"caf\u00e9 ✓"}`
	data := `{"type":"tool.complete","result":"\u0000"}`
	ev := must(s.AppendEvent(ctx, store.NewEvent{RunID: r.ID, Type: "tool.complete", Data: json.RawMessage(data)}))(t)
	a := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingApproval, Approval: store.Approval{Tool: "x", Args: json.RawMessage(obj)}}))(t)
	e := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingElicitation, Elicitation: store.Elicitation{Schema: json.RawMessage(obj)}}))(t)
	m := must(s.AddMessage(ctx, store.NewMessage{RunID: r.ID, Role: store.RoleAssistant, Content: "x",
		Citations: json.RawMessage(`[` + obj + `]`), Meta: json.RawMessage(obj)}))(t)
	a = must(s.ResolveHumanRequest(ctx, alice, a.ID, store.ApprovalAnswer{Decision: events.DecisionEdit, Args: json.RawMessage(obj)}))(t)
	must(s.ResolveHumanRequest(ctx, alice, e.ID, store.ElicitationAnswer{Action: events.ElicitAccept, Content: json.RawMessage(obj)}))(t)

	if got := must(s.EventsAfter(ctx, alice, r.ID, 0, 0))(t); len(got) != 1 || string(got[0].Data) != string(ev.Data) {
		t.Errorf("events = %+v, want %s", got, ev.Data)
	}
	if got := must(s.GetHumanRequest(ctx, events.PendingApproval, alice, a.ID))(t); string(got.Approval.Args) != obj || string(got.Approval.EditedArgs) != obj {
		t.Errorf("approval args %s, edited %s; want %s", got.Approval.Args, got.Approval.EditedArgs, obj)
	}
	if got := must(s.GetHumanRequest(ctx, events.PendingElicitation, alice, e.ID))(t); string(got.Elicitation.Schema) != obj || string(got.Elicitation.Content) != obj {
		t.Errorf("elicitation schema %s, content %s; want %s", got.Elicitation.Schema, got.Elicitation.Content, obj)
	}
	msgs := allMessages(t, s, alice, c.ID)
	if last := msgs[len(msgs)-1]; last.ID != m.ID || string(last.Citations) != `[`+obj+`]` || string(last.Meta) != obj {
		t.Errorf("message %+v, want citations [%s] and meta %s", last, obj, obj)
	}
}

// testStartRunInNewConversation: a run started in a new conversation
// stores both at once, and a start that fails leaves no conversation
// behind.
func testStartRunInNewConversation(t *testing.T, s Record) {
	ctx := t.Context()
	r := must(s.StartRun(ctx, store.NewRun{UserID: alice, NewConversation: &store.NewConversation{UserID: alice, Title: "a new one"},
		UserMessage: "hello", RequestID: "req-1", Owner: "proc-1"}))(t)
	if r.ConversationID == "" || r.Status != store.RunRunning || r.UserMessage != "hello" {
		t.Fatalf("StartRun in a new conversation = %+v", r)
	}
	c := must(s.GetConversation(ctx, alice, r.ConversationID))(t)
	if c.Title != "a new one" || c.Status != store.RunRunning || !c.CreatedAt.Equal(r.CreatedAt) {
		t.Errorf("the new conversation = %+v; want its title, running, created with its run at %v", c, r.CreatedAt)
	}
	if got := must(s.LatestRun(ctx, alice, c.ID))(t); got.ID != r.ID {
		t.Errorf("LatestRun = %s, want the run %s", got.ID, r.ID)
	}
	if msgs := allMessages(t, s, alice, c.ID); len(msgs) != 1 || msgs[0].Content != "hello" || msgs[0].Role != store.RoleUser {
		t.Errorf("messages = %+v, want the user's", msgs)
	}
	finish(t, s, r.ID, store.RunCompleted, "")
	if next := startRun(t, s, c, "again"); next.ConversationID != c.ID {
		t.Errorf("the next run went to %s", next.ConversationID)
	}

	// Fails after the conversation is inserted: there is no run of a new
	// conversation to supersede.
	before := must(s.ListConversations(ctx, alice, store.Page{}))(t)
	wantErr(t, "StartRun in a new conversation superseding a run", second(s.StartRun(ctx, store.NewRun{UserID: alice,
		NewConversation: &store.NewConversation{UserID: alice, Title: "left behind?"}, UserMessage: "x", Supersedes: r.ID})), store.ErrNotFound)
	wantErrs(t, "", map[string]error{
		"StartRun in a new conversation naming one": second(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID,
			NewConversation: &store.NewConversation{UserID: alice}, UserMessage: "x"})),
		"StartRun in a new conversation without a message": second(s.StartRun(ctx, store.NewRun{UserID: alice,
			NewConversation: &store.NewConversation{UserID: alice}})),
		"StartRun in a new conversation of another user": second(s.StartRun(ctx, store.NewRun{UserID: alice,
			NewConversation: &store.NewConversation{UserID: bob}, UserMessage: "x"})),
	}, store.ErrInvalid)
	after := must(s.ListConversations(ctx, alice, store.Page{}))(t)
	if !slices.Equal(ids(before.Conversations), ids(after.Conversations)) {
		t.Errorf("refused starts changed alice's conversations: %v, then %v", ids(before.Conversations), ids(after.Conversations))
	}
	if p := must(s.ListConversations(ctx, bob, store.Page{}))(t); len(p.Conversations) != 0 {
		t.Errorf("bob has conversations %v", ids(p.Conversations))
	}
}
