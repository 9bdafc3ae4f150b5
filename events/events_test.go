package events_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/trellis-ai/trellis/events"
)

// Each event's JSON is API.md's data object minus the envelope.
func TestEventJSON(t *testing.T) {
	usage := events.Usage{InputTokens: 3, OutputTokens: 2, TotalTokens: 5}
	cases := []struct {
		p    events.Payload
		want string
	}{
		{&events.NodeStart{Node: "supervisor"}, `{"type":"node.start","node":"supervisor"}`},
		{&events.NodeEnd{Node: "write", DurationMS: 12}, `{"type":"node.end","node":"write","duration_ms":12}`},
		{&events.NodeEnd{Node: "reflect", DurationMS: 3, Reasoning: "The tool answered."},
			`{"type":"node.end","node":"reflect","duration_ms":3,"reasoning":"The tool answered."}`},
		{&events.ReasoningChunk{Node: "supervisor", Content: "Hm"}, `{"type":"reasoning.chunk","node":"supervisor","content":"Hm"}`},
		{&events.SupervisorThinking{Message: "…"}, `{"type":"supervisor.thinking","message":"…"}`},
		{&events.SupervisorDecided{Action: "call_tool", Tools: []string{"search"}, Reasoning: "r"},
			`{"type":"supervisor.decided","action":"call_tool","tools":["search"],"reasoning":"r"}`},
		{&events.ToolStart{ToolCallID: "c1", Tool: "search", Source: "mcp", Args: json.RawMessage(`{"q":"x"}`)},
			`{"type":"tool.start","tool_call_id":"c1","tool":"search","source":"mcp","args":{"q":"x"}}`},
		{&events.ToolProgress{ToolCallID: "c1", Progress: 0, Total: 0, Message: ""},
			`{"type":"tool.progress","tool_call_id":"c1","progress":0,"total":0,"message":""}`},
		{&events.ToolComplete{ToolCallID: "c1", Tool: "search", Result: "ok", DurationMS: 3},
			`{"type":"tool.complete","tool_call_id":"c1","tool":"search","result":"ok","duration_ms":3}`},
		{&events.ToolError{ToolCallID: "c1", Tool: "search", Error: "boom"},
			`{"type":"tool.error","tool_call_id":"c1","tool":"search","error":"boom"}`},
		{&events.ApprovalRequired{ApprovalID: "a1", ToolCallID: "c1", Tool: "rm", Args: json.RawMessage(`{}`), Revision: 0},
			`{"type":"approval.required","approval_id":"a1","tool_call_id":"c1","tool":"rm","args":{},"revision":0}`},
		{&events.ApprovalResolved{ApprovalID: "a1", Decision: events.DecisionReject, Args: json.RawMessage(`{}`), Reason: "no"},
			`{"type":"approval.resolved","approval_id":"a1","decision":"reject","args":{},"reason":"no"}`},
		{&events.UncertainCallResolved{UncertainCallID: "u1", ToolCallID: "c1", Decision: "skip"},
			`{"type":"uncertain_call.resolved","uncertain_call_id":"u1","tool_call_id":"c1","decision":"skip"}`},
		{&events.ElicitationRequest{ElicitationID: "e1", Source: "t", Message: "m", Schema: json.RawMessage(`{"type":"object"}`)},
			`{"type":"elicitation.request","elicitation_id":"e1","source":"t","message":"m","schema":{"type":"object"}}`},
		{&events.ElicitationResponse{ElicitationID: "e1", Action: "decline"}, `{"type":"elicitation.response","elicitation_id":"e1","action":"decline"}`},
		{&events.DirectResponse{Content: "<b>", ContentType: "html"},
			`{"type":"direct.response","content":"\u003cb\u003e","content_type":"html","widget_type":""}`},
		{&events.ResponseChunk{Content: "Hel"}, `{"type":"response.chunk","content":"Hel"}`},
		{&events.ResponseDone{Content: "Hello [1]", Citations: []events.Citation{{Number: 1, Source: "s"}}, Usage: usage},
			`{"type":"response.done","content":"Hello [1]","citations":[{"number":1,"source":"s"}],"usage":{"input_tokens":3,"output_tokens":2,"thinking_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"total_tokens":5}}`},
		{&events.RunCompleted{Status: "completed", Usage: usage},
			`{"type":"run.completed","status":"completed","usage":{"input_tokens":3,"output_tokens":2,"thinking_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"total_tokens":5}}`},
		{&events.RunInterrupted{Reason: "approval", ApprovalIDs: []string{"a1"}, Pending: []events.Pending{{Kind: events.PendingApproval, ID: "a1", Tool: "rm"}}},
			`{"type":"run.interrupted","reason":"approval","approval_ids":["a1"],"pending":[{"kind":"approval","id":"a1","tool":"rm","revision":0}]}`},
		{&events.RunCancelled{}, `{"type":"run.cancelled"}`},
		{&events.ModelFallback{From: "claude-sonnet-4-5", To: "gpt-4.1", Reason: events.FallbackRateLimited},
			`{"type":"model.fallback","from":"claude-sonnet-4-5","to":"gpt-4.1","reason":"rate_limited"}`},
		{&events.RunFailed{Error: events.ErrorInfo{Code: "model_error", Message: "m"}},
			`{"type":"run.failed","error":{"code":"model_error","message":"m"}}`},
	}
	for _, tc := range cases {
		ev := events.Event{Type: tc.p.EventType(), Data: tc.p}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", ev.Type, b, tc.want)
		}
		// Stored as sent, it decodes back into the same payload.
		p, err := events.Decode(ev.Type, b)
		if err != nil {
			t.Fatalf("%s: decode: %v", ev.Type, err)
		}
		again, _ := json.Marshal(events.Event{Type: p.EventType(), Data: p})
		if string(again) != tc.want {
			t.Errorf("%s: decoded as\n%s\nwant %s", ev.Type, again, tc.want)
		}
	}
}

func TestDecodeRefusesWhatIsNotAnEvent(t *testing.T) {
	if _, err := events.Decode("run.sideways", []byte(`{}`)); !errors.Is(err, events.ErrUnknown) {
		t.Errorf("unknown type: %v, want ErrUnknown", err)
	}
	p, err := events.Decode(events.TypeRunFailed, []byte(`{"error":"not an object"}`))
	if err == nil || p == nil || p.EventType() != events.TypeRunFailed {
		t.Errorf("malformed data: %v, %v; want the payload's type and an error", p, err)
	}
}

func TestTerminalEvents(t *testing.T) {
	for _, typ := range []string{events.TypeRunCompleted, events.TypeRunInterrupted, events.TypeRunCancelled, events.TypeRunFailed} {
		if !events.Terminal(typ) {
			t.Errorf("%s is not terminal", typ)
		}
	}
	for _, typ := range []string{events.TypeResponseDone, events.TypeApprovalRequired, "run.started", ""} {
		if events.Terminal(typ) {
			t.Errorf("%q is terminal", typ)
		}
	}
}
