package nodes_test

import (
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/nodes"
)

// A turn with memory off is not offered the memory tools, and a call of
// one that the model makes anyway does not run; a turn with memory on is
// offered them.
func TestNoMemoryWithholdsTheMemoryTools(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "s1", "name": "search", "args": {"q": "boats"}}]}, "repeat": true},
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}, "repeat": true},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}, "repeat": true},
		{"match": {"node": "synthesize"}, "reply": {"text": "done"}, "repeat": true},
		{"match": {"node": "write"}, "reply": {"text": "done"}, "repeat": true}
	]}`, nodes.Options{MemoryTools: []string{"search"}})

	r := collect(h.agent.Run(t.Context(), "off", nodes.Input{Message: "find boats", UserID: "u1", NoMemory: true}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := h.state(t, "off").ToolResults
	if len(res) != 1 || res[0].Status != nodes.ToolSkipped || !strings.Contains(res[0].Content, "memory is off") {
		t.Errorf("with memory off the call gave %+v", res)
	}
	for _, c := range h.model.Calls() {
		if c.Node == nodes.NodeSupervisor && strings.Contains(c.System, "- search ") {
			t.Errorf("with memory off the supervisor was offered search:\n%s", c.System)
		}
	}

	calls := len(h.model.Calls())
	if r := collect(h.agent.Run(t.Context(), "on", nodes.Input{Message: "find boats", UserID: "u1"})); r.err != nil {
		t.Fatal(r.err)
	}
	if res := h.state(t, "on").ToolResults; len(res) != 1 || res[0].Status != nodes.ToolSuccess {
		t.Errorf("with memory on the call gave %+v", res)
	}
	if c := h.model.Calls()[calls]; !strings.Contains(c.System, "- search ") {
		t.Errorf("with memory on the supervisor was not offered search:\n%s", c.System)
	}
}
