package nodes_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

// A token budget reached mid-workflow — the sub-agent done, the parent
// not — ends the run through handle_blocked with an honest answer, written
// with no further model call, and response.done shows the use.
func TestBudgetTokensReachedMidWorkflow(t *testing.T) {
	const script = `{"steps": [
		{"match": {"node": "supervisor", "contains": "plan", "tool_result": false},
		 "reply": {"tool_calls": [{"id": "call_r", "name": "task", "args": {"agent": "researcher", "task": "find the go news"}}],
		           "usage": {"input_tokens": 20, "output_tokens": 5}}},
		{"match": {"node": "supervisor", "contains": "find the go news", "tool_result": false},
		 "reply": {"tool_calls": [{"id": "s1", "name": "search", "args": {"q": "go"}}], "usage": {"input_tokens": 20, "output_tokens": 5}}},
		{"match": {"node": "reflect", "contains": "find the go news"}, "reply": {"json": {"assessment": "satisfied"}, "usage": {"input_tokens": 20, "output_tokens": 5}}},
		{"match": {"node": "write", "contains": "find the go news"}, "reply": {"text": "Go 1.26 adds new(expr).", "usage": {"input_tokens": 20, "output_tokens": 5}}}
	]}`
	h := newHarness(t, script, nodes.Options{SubAgents: testSubAgents, Budget: events.Budget{Tokens: 1000, ToolCalls: 10}})
	r := collect(h.agent.Run(t.Context(), "c1", nodes.Input{Message: "plan the launch", Budget: &events.Budget{Tokens: 90}}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	done := last[*events.ResponseDone](r)
	if done == nil || done.Budget == nil {
		t.Fatalf("no budget in response.done: %s", r.trace())
	}
	if b := done.Budget; b.Exceeded != "tokens" || b.Tokens != 100 || b.Limits.Tokens != 90 || b.ToolCalls != 2 || b.Limits.ToolCalls != 10 {
		t.Errorf("budget = %+v", b)
	}
	for _, want := range []string{"budget", "tokens (100 of 90 spent)", "Done before the budget ran out:", "- task: Go 1.26 adds new(expr).", "Not done"} {
		if !strings.Contains(done.Content, want) {
			t.Errorf("answer lacks %q:\n%s", want, done.Content)
		}
	}
	if s := h.state(t, "c1"); s.Outcome != nodes.OutcomeBlocked {
		t.Errorf("outcome %s", s.Outcome)
	}
	h.allConsumed(t) // the root's reflect and write made no model call
}

// A tool-call budget stops further calls; the run still ends honestly.
func TestBudgetToolCalls(t *testing.T) {
	const script = `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false},
		 "reply": {"tool_calls": [{"id": "s1", "name": "search", "args": {"q": "a"}}, {"id": "s2", "name": "search", "args": {"q": "b"}}]}},
		{"match": {"node": "write"}, "reply": {"text": "I could search once only."}}
	]}`
	h := newHarness(t, script, nodes.Options{Budget: events.Budget{ToolCalls: 1}})
	r := h.run(t, "c1", "search twice")
	if r.err != nil {
		t.Fatal(r.err)
	}
	s := h.state(t, "c1")
	got := toolNames(s.ToolResults)
	slices.Sort(got)
	if len(got) != 2 || got[0] != "search=skipped" || got[1] != "search=success" {
		t.Errorf("results = %v", got)
	}
	if d := last[*events.ResponseDone](r); d.Budget == nil || d.Budget.Exceeded != "tool_calls" || d.Budget.ToolCalls != 1 {
		t.Errorf("response.done = %+v", d)
	}
	if s.Outcome != nodes.OutcomeBlocked {
		t.Errorf("outcome %s", s.Outcome)
	}
	h.allConsumed(t)
}
