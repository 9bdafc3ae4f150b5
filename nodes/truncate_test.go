package nodes_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// TestTruncatedToolResult: a tool result above the provider's cap reaches
// the client's tool.complete with "truncated": true, and the model reads
// the cut result with its note.
func TestTruncatedToolResult(t *testing.T) {
	reg, _ := scriptedModels(t, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "d1", "name": "dump", "args": {"q": "all"}}]}},
		{"match": {"node": "reflect"}, "reply": {"tool_calls": [{"name": "assess", "args": {"assessment": "satisfied", "reasoning": "enough"}}]}},
		{"match": {"node": "write", "tool_result": true}, "reply": {"text": "It is long."}}
	]}`)
	local := operators.NewRegistry()
	local.MustAdd(operators.NewTool("dump", "Dumps everything.", func(context.Context, operators.Call, searchIn) (operators.Result, error) {
		return operators.TextResult(strings.Repeat("data ", 1000)), nil
	}, operators.ReadOnly()))
	tools := operators.NewProvider(operators.ProviderConfig{Local: local, MaxResultBytes: 100})
	agent, err := nodes.New(reg, tools, memory.New(), nodes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := collect(agent.Run(t.Context(), "c1", nodes.Input{Message: "dump it", RequestID: "r1"}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	done := last[*events.ToolComplete](r)
	if done == nil {
		t.Fatalf("no tool.complete in %s", r.trace())
	}
	b, err := json.Marshal(events.Event{Type: events.TypeToolComplete, Data: done})
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Result    string `json:"result"`
		Truncated bool   `json:"truncated"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	note := "\n[truncated: the result was 5000 bytes; the first 100 are shown]"
	if !wire.Truncated || wire.Result != strings.Repeat("data ", 20)+note {
		t.Fatalf("tool.complete = %s", b)
	}
	snap, err := agent.State(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if trs := snap.State.ToolResults; len(trs) != 1 || !strings.HasSuffix(trs[0].Content, note) {
		t.Errorf("the model's tool results = %+v, want the truncation note", trs)
	}
}
