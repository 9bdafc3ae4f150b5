package nodes_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// budgetAgent is an agent over saver playing script, under budget.
func budgetAgent(t *testing.T, saver graph.Checkpointer, script string, budget events.Budget) (*nodes.Agent, *llm.Scripted) {
	t.Helper()
	reg, m := scriptedModels(t, script)
	tools, _ := testTools(t)
	a, err := nodes.New(reg, tools, saver, nodes.Options{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	return a, m
}

func sqliteSaver(t *testing.T) graph.Checkpointer {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "cp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// approveAll answers the run's pending approval with a yes.
func approveAll(t *testing.T, a *nodes.Agent, conv string, r run) run {
	t.Helper()
	req := last[*events.ApprovalRequired](r)
	if r.err != nil || req == nil {
		t.Fatalf("no approval asked: %s, %v", r.trace(), r.err)
	}
	return collect(a.Resume(t.Context(), conv, nodes.ApprovalDecision{ApprovalID: req.ApprovalID, Decision: events.DecisionApprove}))
}

// A budget of two tool calls, the run pausing for an approval after one:
// after the approval the run has one call left, not two. Of the two calls
// the approved decision makes, one runs and the other is refused, and the
// run ends through handle_blocked.
func TestBudgetToolCallsSurviveApproval(t *testing.T) {
	const script = `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "s1", "name": "search", "args": {"q": "a"}}]}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "need_more", "reasoning": "and delete"}}},
		{"match": {"node": "supervisor", "tool_result": true}, "reply": {"tool_calls": [
			{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/a"}},
			{"id": "s2", "name": "search", "args": {"q": "b"}}]}},
		{"match": {"node": "write"}, "reply": {"text": "Searched once, then ran out of tool calls."}}
	]}`
	a, m := budgetAgent(t, sqliteSaver(t), script, events.Budget{ToolCalls: 2})
	r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "search then delete"}))
	if ri := last[*events.RunInterrupted](r); ri == nil || ri.Reason != string(events.PendingApproval) {
		t.Fatalf("first segment: %s, %v", r.trace(), r.err)
	}
	r = approveAll(t, a, "c1", r)
	if r.err != nil {
		t.Fatal(r.err)
	}
	snap, err := a.State(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	s := snap.State
	got := toolNames(s.ToolResults)
	if len(got) != 3 || got[0] != "search=success" {
		t.Fatalf("results = %v", got)
	}
	if skipped(got[1:]) != 1 {
		t.Errorf("after the approval, calls beyond the budget ran: %v", got)
	}
	if s.Outcome != nodes.OutcomeBlocked || s.BudgetSpent.ToolCalls != 2 {
		t.Errorf("outcome %s, spent %+v", s.Outcome, s.BudgetSpent)
	}
	if d := last[*events.ResponseDone](r); d == nil || d.Budget == nil || d.Budget.Exceeded != "tool_calls" || d.Budget.ToolCalls != 2 {
		t.Errorf("response.done = %+v", d)
	}
	if left := m.Unconsumed(); len(left) > 0 {
		t.Errorf("unused steps: %v", left)
	}
}

// A token budget of 100, 90 spent before the approval: the model call
// after it (20 more) reaches the budget, and no further model call is
// made — the supervisor does not plan again and the answer is the
// brief's fallback.
func TestBudgetTokensSurviveApproval(t *testing.T) {
	const script = `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "s1", "name": "search", "args": {"q": "a"}}],
		 "usage": {"input_tokens": 50, "output_tokens": 10}}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "need_more", "reasoning": "and delete"}, "usage": {"input_tokens": 10, "output_tokens": 5}}},
		{"match": {"node": "supervisor", "tool_result": true}, "reply": {"tool_calls": [{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/a"}}],
		 "usage": {"input_tokens": 10, "output_tokens": 5}}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "need_more", "reasoning": "more"}, "usage": {"input_tokens": 15, "output_tokens": 5}}}
	]}`
	a, m := budgetAgent(t, sqliteSaver(t), script, events.Budget{Tokens: 100})
	r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "search then delete"}))
	r = approveAll(t, a, "c1", r)
	if r.err != nil {
		t.Fatal(r.err)
	}
	d := last[*events.ResponseDone](r)
	if d == nil || d.Budget == nil || d.Budget.Exceeded != "tokens" || d.Budget.Tokens != 110 {
		t.Fatalf("response.done = %+v: %s", d, r.trace())
	}
	snap, err := a.State(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if s := snap.State; s.Outcome != nodes.OutcomeBlocked || s.BudgetSpent.Tokens != 110 || s.TurnUsage.TotalTokens != 110 {
		t.Errorf("outcome %s, spent %+v, turn usage %+v", s.Outcome, s.BudgetSpent, s.TurnUsage)
	}
	if left := m.Unconsumed(); len(left) > 0 {
		t.Errorf("unused steps: %v", left)
	}
}

// A run cut off (as a crash would) and taken up from its checkpoint by a
// new Agent keeps its count: of its budget of two tool calls, one was
// made before the cut, so of the two calls planned after it one is
// refused. So does a run parked at an approval and answered on another
// Agent.
func TestBudgetSurvivesCrash(t *testing.T) {
	saver := sqliteSaver(t)
	first, _ := budgetAgent(t, saver, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "s1", "name": "search", "args": {"q": "a"}}],
		 "usage": {"input_tokens": 30, "output_tokens": 10}}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "need_more", "reasoning": "more"}, "usage": {"input_tokens": 5, "output_tokens": 5}}},
		{"match": {"node": "supervisor", "tool_result": true}, "reply": {"text": "too late", "delay_ms": 5000}}
	]}`, events.Budget{ToolCalls: 2, Tokens: 1000})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var r run
	for ev, err := range first.Run(ctx, "c1", nodes.Input{Message: "search more"}) {
		r.events = append(r.events, ev)
		if err != nil {
			r.err = err
		}
		if s, ok := ev.Data.(*events.NodeStart); ok && s.Node == nodes.NodeSupervisor && supervisors(r) == 2 {
			cancel()
		}
	}
	if !errors.Is(r.err, context.Canceled) || !strings.HasSuffix(r.trace(), "+supervisor supervisor.thinking run.cancelled") {
		t.Fatalf("cut run: %s, %v", r.trace(), r.err)
	}

	second, m := budgetAgent(t, saver, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": true}, "reply": {"tool_calls": [
			{"id": "s2", "name": "search", "args": {"q": "b"}},
			{"id": "s3", "name": "search", "args": {"q": "c"}}], "usage": {"input_tokens": 5, "output_tokens": 5}}},
		{"match": {"node": "write"}, "reply": {"text": "Searched twice.", "usage": {"input_tokens": 5, "output_tokens": 5}}}
	]}`, events.Budget{ToolCalls: 2, Tokens: 1000})
	r = collect(second.Continue(t.Context(), "c1"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	d := last[*events.ResponseDone](r)
	if d == nil || d.Budget == nil || d.Budget.Exceeded != "tool_calls" || d.Budget.ToolCalls != 2 || d.Budget.Tokens != 70 {
		t.Fatalf("response.done = %+v: %s", d, r.trace())
	}
	snap, err := second.State(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(snap.State.ToolResults); len(got) != 3 || skipped(got) != 1 || snap.State.Outcome != nodes.OutcomeBlocked {
		t.Errorf("results %v (want one of the last two skipped), outcome %s", got, snap.State.Outcome)
	}
	if left := m.Unconsumed(); len(left) > 0 {
		t.Errorf("unused steps: %v", left)
	}

	// Parked at an approval, answered on a new Agent.
	parked, _ := budgetAgent(t, saver, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "s1", "name": "search", "args": {"q": "a"}}]}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "need_more", "reasoning": "and delete"}}},
		{"match": {"node": "supervisor", "tool_result": true}, "reply": {"tool_calls": [
			{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/a"}},
			{"id": "s2", "name": "search", "args": {"q": "b"}}]}}
	]}`, events.Budget{ToolCalls: 2})
	r = collect(parked.Run(t.Context(), "c2", nodes.Input{Message: "search then delete"}))
	answering, m := budgetAgent(t, saver, `{"steps": [
		{"match": {"node": "write"}, "reply": {"text": "Searched; one call was over budget."}}
	]}`, events.Budget{ToolCalls: 2})
	r = approveAll(t, answering, "c2", r)
	if r.err != nil {
		t.Fatal(r.err)
	}
	snap, err = answering.State(t.Context(), "c2")
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(snap.State.ToolResults); len(got) != 3 || skipped(got) != 1 || snap.State.Outcome != nodes.OutcomeBlocked {
		t.Errorf("results %v (want one of the last two skipped), outcome %s", got, snap.State.Outcome)
	}
	if left := m.Unconsumed(); len(left) > 0 {
		t.Errorf("unused steps: %v", left)
	}
}

// skipped counts the results a budget (or anything else) skipped.
func skipped(results []string) int {
	n := 0
	for _, r := range results {
		if strings.HasSuffix(r, "="+string(nodes.ToolSkipped)) {
			n++
		}
	}
	return n
}

// supervisors counts the supervisor's starts in r.
func supervisors(r run) int {
	n := 0
	for _, e := range r.events {
		if s, ok := e.Data.(*events.NodeStart); ok && s.Node == nodes.NodeSupervisor {
			n++
		}
	}
	return n
}

// A sub-agent parked at an approval holds the run's use so far in its own
// checkpoint (its parent's lacks what the sub-agent spent): resumed, the
// run takes it up, and the approved call, over the token budget, is not
// made.
func TestBudgetSurvivesSubagentApproval(t *testing.T) {
	const script = `{"steps": [
		{"match": {"node": "supervisor", "contains": "tidy up", "tool_result": false, "tool": "task"},
		 "reply": {"tool_calls": [{"id": "call_j", "name": "task", "args": {"agent": "janitor", "task": "delete /tmp/a.txt"}}],
		           "usage": {"input_tokens": 15, "output_tokens": 5}}},
		{"match": {"node": "supervisor", "contains": "delete /tmp/a.txt", "tool_result": false},
		 "reply": {"tool_calls": [{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/a.txt"}}],
		           "usage": {"input_tokens": 40, "output_tokens": 10}}}
	]}`
	h := newHarness(t, script, nodes.Options{SubAgents: testSubAgents})
	r := collect(h.agent.Run(t.Context(), "c1", nodes.Input{Message: "tidy up", Budget: &events.Budget{Tokens: 70}}))
	if req := last[*events.ApprovalRequired](r); req == nil || req.Tool != "delete_file" {
		t.Fatalf("first segment: %s, %v", r.trace(), r.err)
	}
	r = approveAll(t, h.agent, "c1", r)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(*h.deleted) != 0 {
		t.Errorf("the call over budget ran: deleted %v", *h.deleted)
	}
	d := last[*events.ResponseDone](r)
	if d == nil || d.Budget == nil || d.Budget.Exceeded != "tokens" || d.Budget.Tokens != 70 {
		t.Fatalf("response.done = %+v: %s", d, r.trace())
	}
	if s := h.state(t, "c1"); s.Outcome != nodes.OutcomeBlocked {
		t.Errorf("outcome %s", s.Outcome)
	}
	h.allConsumed(t)
}
