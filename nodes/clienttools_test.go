package nodes_test

import (
	"encoding/json"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

// A call of a client tool ends the turn with the call, unrun; the
// client's next request, with the whole conversation and the tool's
// result, goes on from it to the answer.
func TestClientToolEndsTheTurnAndTheResultContinuesIt(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor", "tool": "weather", "tool_result": false},
		 "reply": {"tool_calls": [{"id": "call_w", "name": "weather", "args": {"city": "Oslo"}}]}},
		{"match": {"node": "supervisor", "tool": "weather", "tool_result": true}, "reply": {"json": {"action": "ANSWER"}}},
		{"match": {"node": "write"}, "reply": {"text": "It is sunny in Oslo."}}
	]}`, nodes.Options{})
	weather := []nodes.ClientTool{{Name: "weather", Description: "Weather of a city.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}

	first := collect(h.agent.Run(t.Context(), "c1", nodes.Input{Message: "weather in Oslo?", RequestID: "r1", ClientTools: weather}))
	if first.err != nil {
		t.Fatal(first.err)
	}
	wantTrace(t, first, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:weather -execute_tool +reflect -reflect +stream response.done -stream run.completed`)
	start := last[*events.ToolStart](first)
	if start.Source != nodes.SourceClient || start.ToolCallID != "call_w" || string(start.Args) != `{"city":"Oslo"}` {
		t.Errorf("tool.start = %+v, want the client's call", start)
	}
	if st := h.state(t, "c1"); st.Outcome != nodes.OutcomeClientTools || len(st.ToolResults) != 0 {
		t.Errorf("outcome %q, results %v: want client_tools and nothing run", st.Outcome, st.ToolResults)
	}

	second := collect(h.agent.Start(t.Context(), "c2", nodes.Input{Message: "weather in Oslo?", RequestID: "r2", ClientTools: weather,
		Continued: []nodes.Message{
			{Role: nodes.RoleAssistant, ToolCalls: []nodes.ToolCall{{ID: "call_w", Tool: "weather", Args: json.RawMessage(`{"city":"Oslo"}`)}}},
			{Role: nodes.RoleTool, ToolCallID: "call_w", Name: "weather", Content: "sunny"},
		}}))
	if second.err != nil {
		t.Fatal(second.err)
	}
	if got := second.text(); got != "It is sunny in Oslo." {
		t.Errorf("answer %q", got)
	}
	if got := roles(h.state(t, "c2").Messages); got != "user,assistant,tool,assistant" {
		t.Errorf("messages %s", got)
	}
	h.allConsumed(t)
}

// History comes before the message, each user message a turn of its own.
func TestHistoryPrecedesTheMessage(t *testing.T) {
	h := newHarness(t, `{"steps": [{"match": {"turn": 2}, "reply": {"text": "Bob."}, "repeat": true}]}`, nodes.Options{})
	r := collect(h.agent.Start(t.Context(), "c", nodes.Input{Message: "what is my name?", RequestID: "r", History: []nodes.Message{
		{Role: nodes.RoleUser, Content: "I am Bob"}, {Role: nodes.RoleAssistant, Content: "Hello Bob"}}}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	st := h.state(t, "c")
	if got := roles(st.Messages); got != "user,assistant,user,assistant" || st.Turn != 2 || st.Messages[1].Turn != 1 {
		t.Errorf("messages %s, turn %d", got, st.Turn)
	}
	if st.Input.History != nil {
		t.Error("the history is kept twice: in the messages and in the input")
	}
}
