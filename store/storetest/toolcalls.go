package storetest

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// A call's record: begun once, found again by a later attempt as it was
// left (started: it may have run; ended: with its outcome), and taken
// over by an attempt after a question or a person's "run it again".
func testToolCalls(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r := startRun(t, s, c, "write a note")
	call := store.NewToolCall{Key: "call-key-1", RunID: r.ID, Tool: "write"}

	if prior := must(s.BeginToolCall(ctx, call))(t); prior.State != "" {
		t.Fatalf("first begin found %+v, want nothing", prior)
	}
	prior := must(s.BeginToolCall(ctx, call))(t)
	if prior.State != store.CallStarted || prior.Key != call.Key || prior.RunID != r.ID || prior.Tool != "write" {
		t.Fatalf("second begin found %+v, want the call started: it may have run", prior)
	}
	again := call
	again.Again = "uncertain-1"
	if prior := must(s.BeginToolCall(ctx, again))(t); prior.State != "" {
		t.Errorf("begin again (a person said run it again) found %+v, want it taken over", prior)
	}
	if prior := must(s.BeginToolCall(ctx, again))(t); prior.State != store.CallStarted || prior.Again != "uncertain-1" {
		t.Errorf("begin again with the same retry found %+v, want the call started: a retry lets it start once", prior)
	}

	if err := s.SetToolCall(ctx, call.Key, store.CallAsking, nil); err != nil {
		t.Fatal(err)
	}
	if prior := must(s.BeginToolCall(ctx, call))(t); prior.State != "" {
		t.Errorf("begin after a question found %+v, want it issued again", prior)
	}

	outcome := json.RawMessage(`{"result":{"status":"success","content":"wrote n1"}}`)
	if err := s.SetToolCall(ctx, call.Key, store.CallEnded, outcome); err != nil {
		t.Fatal(err)
	}
	for _, c := range []store.NewToolCall{call, again} {
		prior := must(s.BeginToolCall(ctx, c))(t)
		var got, want any
		_ = json.Unmarshal(prior.Outcome, &got)
		_ = json.Unmarshal(outcome, &want)
		if prior.State != store.CallEnded || !reflect.DeepEqual(got, want) {
			t.Errorf("begin (again %v) of an ended call found %+v, want it ended with its outcome", c.Again, prior)
		}
	}

	wantErr(t, "a call of an unknown run", second(s.BeginToolCall(ctx, store.NewToolCall{Key: "k2", RunID: "no-such-run", Tool: "write"})), store.ErrNotFound)
	wantErr(t, "a call without a tool", second(s.BeginToolCall(ctx, store.NewToolCall{Key: "k3", RunID: r.ID})), store.ErrInvalid)
	wantErr(t, "setting an unknown call", s.SetToolCall(ctx, "no-such-key", store.CallEnded, nil), store.ErrNotFound)
	wantErr(t, "setting a call started", s.SetToolCall(ctx, call.Key, store.CallStarted, nil), store.ErrInvalid)
	wantErr(t, "an outcome that is not JSON", s.SetToolCall(ctx, call.Key, store.CallEnded, json.RawMessage(`{`)), store.ErrInvalid)

	if err := s.DeleteConversation(ctx, alice, c.ID); err != nil {
		t.Fatal(err)
	}
	d := newConversation(t, s, alice)
	rd := startRun(t, s, d, "again")
	if prior := must(s.BeginToolCall(ctx, store.NewToolCall{Key: call.Key, RunID: rd.ID, Tool: "write"}))(t); prior.State != "" {
		t.Errorf("a deleted conversation's call record is still found: %+v", prior)
	}
}

// An uncertain call is a human request like the others: pending while
// its run is parked on it, answered once (retry, skip or fail), expired
// with its run, named in JSON as tool.uncertain names it.
func testUncertainCalls(t *testing.T, s Record) {
	ctx := t.Context()
	c1, c2 := newConversation(t, s, alice), newConversation(t, s, alice)
	r1, r2 := startRun(t, s, c1, "one"), startRun(t, s, c2, "two")
	in := store.NewHumanRequest{ID: "idem-1", RunID: r1.ID, Kind: events.PendingUncertainCall,
		UncertainCall: store.UncertainCall{ToolCallID: "call-1", Tool: "write", Args: json.RawMessage(`{"note":"n1"}`)}}
	h := must(s.CreateHumanRequest(ctx, in))(t)
	if h.Status != store.HumanPending || h.ConversationID != c1.ID || h.UserID != alice || h.UncertainCall.Tool != "write" ||
		string(h.UncertainCall.Args) != `{"note":"n1"}` {
		t.Fatalf("created %+v", h)
	}
	wantErr(t, "the same id again", second(s.CreateHumanRequest(ctx, in)), store.ErrConflict)
	wantErr(t, "no id", second(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r1.ID, Kind: events.PendingUncertainCall,
		UncertainCall: store.UncertainCall{Tool: "write"}})), store.ErrInvalid)
	wantErr(t, "asked for as an approval", second(s.GetHumanRequest(ctx, events.PendingApproval, alice, h.ID)), store.ErrNotFound)
	wantErr(t, "answered as an approval", second(s.ResolveHumanRequest(ctx, alice, h.ID, store.ApprovalAnswer{Decision: events.DecisionApprove})), store.ErrNotFound)
	wantErr(t, "another user's", second(s.GetHumanRequest(ctx, events.PendingUncertainCall, bob, h.ID)), store.ErrNotFound)

	other := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{ID: "idem-2", RunID: r2.ID, Kind: events.PendingUncertainCall,
		UncertainCall: store.UncertainCall{Tool: "charge"}}))(t)
	if got := pendingIDs(t, s, events.PendingUncertainCall, c1.ID); len(got) != 1 || got[0] != h.ID {
		t.Errorf("pending of %s = %v, want [%s]", c1.ID, got, h.ID)
	}
	wantErr(t, "an unknown decision", second(s.ResolveHumanRequest(ctx, alice, h.ID, store.CallAnswer{Decision: "maybe"})), store.ErrInvalid)
	res := must(s.ResolveHumanRequest(ctx, alice, h.ID, store.CallAnswer{Decision: events.CallSkip}))(t)
	if res.Status != store.HumanSkipped || res.ResolvedAt == nil {
		t.Errorf("resolved %+v, want skipped", res)
	}
	wantErr(t, "a second answer", second(s.ResolveHumanRequest(ctx, alice, h.ID, store.CallAnswer{Decision: events.CallRetry})), store.ErrAlreadyResolved)

	data := must(json.Marshal(res))(t)
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"uncertain_call_id": "idem-1", "tool_call_id": "call-1", "tool": "write", "status": "skipped",
		"decision": "skip", "conversation_id": c1.ID, "run_id": r1.ID} {
		if fields[k] != want {
			t.Errorf("uncertain call JSON %s: %q is %v, want %v", data, k, fields[k], want)
		}
	}

	finish(t, s, r2.ID, store.RunInterrupted, events.PendingUncertainCall)
	if got := must(s.GetRun(ctx, alice, r2.ID))(t); !got.Active() || got.InterruptReason != events.PendingUncertainCall {
		t.Errorf("a run parked on an uncertain call: %+v, want active, interrupted for it", got)
	}
	finish(t, s, r2.ID, store.RunCancelled, "")
	if got := must(s.GetHumanRequest(ctx, events.PendingUncertainCall, alice, other.ID))(t); got.Status != store.HumanExpired {
		t.Errorf("after its run was cancelled: %+v, want expired", got)
	}
}
