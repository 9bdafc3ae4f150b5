package nodes_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

// billScript: the supervisor delegates to the biller, whose one call is
// of flaky, a tool neither read-only nor idempotent. Every step is
// consumed once: an agent that ran a step again would find none.
const billScript = `{"steps": [
	{"match": {"node": "supervisor", "contains": "bill the customer", "tool_result": false, "tool": "task"},
	 "reply": {"tool_calls": [{"id": "call_b", "name": "task", "args": {"agent": "biller", "task": "charge the card"}}]}},
	{"match": {"node": "supervisor", "contains": "charge the card", "tool_result": false},
	 "reply": {"tool_calls": [{"id": "f1", "name": "flaky", "args": {"q": "charge"}}]}},
	{"match": {"node": "reflect", "contains": "charge the card"}, "reply": {"json": {"assessment": "satisfied"}}},
	{"match": {"node": "write", "contains": "charge the card"}, "reply": {"text": "Charged."}},
	{"match": {"node": "reflect", "contains": "bill the customer"}, "reply": {"json": {"assessment": "satisfied"}}},
	{"match": {"node": "write", "contains": "bill the customer"}, "reply": {"text": "Billed."}}
]}`

// A sub-agent's call that a crash left started and not ended parks the
// whole run, on a SQLite checkpoint, on an uncertain call named by the
// sub-agent's path; the decision reaches the sub-agent: retry runs the
// call once more, under the key it began with, skip runs nothing and
// the sub-agent reads that it was skipped. Either way the sub-agent and
// the run finish, and nothing before the call runs again.
func TestSubagentUncertainCall(t *testing.T) {
	for _, decision := range []events.CallDecision{events.CallRetry, events.CallSkip} {
		t.Run(string(decision), func(t *testing.T) {
			log := &callLog{crashed: map[string]bool{"flaky": true}}
			reg, model := scriptedModels(t, billScript)
			tools, _ := testTools(t)
			a, err := nodes.New(reg, tools, sqliteSaver(t), nodes.Options{Calls: log,
				SubAgents: nodes.SubAgents{Agents: []nodes.SubAgent{{Name: "biller", Description: "charges cards", Tools: []string{"flaky"}}}}})
			if err != nil {
				t.Fatal(err)
			}
			r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "bill the customer"}))
			ri := last[*events.RunInterrupted](r)
			if r.err != nil || ri == nil || ri.Reason != "uncertain_call" || len(ri.UncertainCallIDs) != 1 || len(ri.Pending) != 1 {
				t.Fatalf("run: %v %s\ninterrupted %+v", r.err, r.trace(), ri)
			}
			p := ri.Pending[0]
			if p.Namespace != "biller:call_b" || p.Tool != "flaky" || p.ToolCallID != "f1" || p.UncertainCallID != ri.UncertainCallIDs[0] {
				t.Errorf("pending %+v, want the biller's call of flaky", p)
			}
			var announced *events.Event
			for i, e := range r.events {
				if _, ok := e.Data.(*events.ToolUncertain); ok {
					announced = &r.events[i]
				}
			}
			if announced == nil || announced.Namespace != "biller:call_b" {
				t.Errorf("tool.uncertain %+v, want it under the biller's path", announced)
			}
			pend, err := a.Pending(t.Context(), "c1")
			if err != nil || len(pend) != 1 || pend[0].UncertainCallID != p.UncertainCallID || pend[0].Namespace != "biller:call_b" {
				t.Errorf("pending after the run: %+v %v", pend, err)
			}

			r = collect(a.AnswerUncertainCall(t.Context(), "c1", p.UncertainCallID, decision, false))
			if d := last[*events.ResponseDone](r); r.err != nil || d == nil || d.Content != "Billed." {
				t.Fatalf("after %s: %v %s", decision, r.err, r.trace())
			}
			var end *events.SubagentEnd
			var flaky []string
			for _, e := range r.events {
				switch d := e.Data.(type) {
				case *events.SubagentEnd:
					end = d
				case *events.ToolStart:
					if e.Namespace == "biller:call_b" {
						flaky = append(flaky, d.Tool)
					}
				case *events.ToolError:
					if decision == events.CallSkip && (e.Namespace != "biller:call_b" || !strings.Contains(d.Error, "skip")) {
						t.Errorf("the skip reads %q under %q", d.Error, e.Namespace)
					}
				}
			}
			if end == nil || end.Status != events.SubagentCompleted || end.Result != "Charged." {
				t.Errorf("subagent.end %+v", end)
			}
			switch decision {
			case events.CallRetry:
				key := strings.Split(log.begun[0], ":")[1]
				if !slices.Equal(flaky, []string{"flaky"}) || len(log.begun) != 2 || log.begun[1] != "flaky:"+key+":"+p.UncertainCallID {
					t.Errorf("retried: started %v, begun %q; want flaky once more, under its key, let run by the decision", flaky, log.begun)
				}
			case events.CallSkip:
				if len(flaky) != 0 || len(log.begun) != 1 {
					t.Errorf("skipped: started %v, begun %q; want nothing run", flaky, log.begun)
				}
			}
			if left := model.Unconsumed(); len(left) > 0 {
				t.Errorf("unused steps %v", left)
			}
			if pend, err := a.Pending(t.Context(), "c1"); err != nil || len(pend) != 0 {
				t.Errorf("pending after the decision: %+v %v", pend, err)
			}
		})
	}
}
