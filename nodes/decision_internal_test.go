package nodes

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

func call(name, args string) llms.ToolCall {
	return llms.ToolCall{ID: "id_" + name, Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}
}

func TestParseDecision(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		calls []llms.ToolCall
		want  Action
		err   string
	}{
		{"plain text answers", "Paris is the capital.", nil, ActionAnswer, ""},
		{"json answer", `{"action": "answer", "reasoning": "known"}`, nil, ActionAnswer, ""},
		{"fenced json", "Here:\n```json\n{\"action\": \"CLARIFY\", \"question\": \"Which?\"}\n```", nil, ActionClarify, ""},
		{"decide call", "", []llms.ToolCall{call("decide", `{"action":"CALL_TOOL","tool_calls":[{"tool":"search","args":{"q":"x"}}]}`)}, ActionCallTool, ""},
		{"direct tool calls", "", []llms.ToolCall{call("search", `{"q":"x"}`), call("calculator", `"{\"expression\":\"1+1\"}"`)}, ActionCallTool, ""},
		{"broken json", `{"action": "CALL_TOOL", "tool_calls": [`, nil, "", "not a decision object"},
		{"unknown action", `{"action": "DANCE"}`, nil, "", `unknown action "DANCE"`},
		{"missing action", `{"reasoning": "hm"}`, nil, "", `"action" is missing`},
		{"clarify without question", `{"action": "CLARIFY"}`, nil, "", "needs a question"},
		{"call without tools", `{"action": "CALL_TOOL"}`, nil, "", "needs tool_calls"},
		{"args not an object", `{"action": "CALL_TOOL", "tool_calls": [{"tool": "x", "args": [1]}]}`, nil, "", "args must be a JSON object"},
		{"workflow cycle", `{"action": "CREATE_WORKFLOW", "workflow": [{"id": "a", "tool": "t", "depends_on": ["b"]}, {"id": "b", "tool": "t", "depends_on": ["a"]}]}`, nil, "", "cycle"},
		{"workflow unknown dep", `{"action": "CREATE_WORKFLOW", "workflow": [{"id": "a", "tool": "t", "depends_on": ["z"]}]}`, nil, "", `unknown step "z"`},
		{"workflow duplicate id", `{"action": "CREATE_WORKFLOW", "workflow": [{"id": "a", "tool": "t"}, {"id": "a", "tool": "t"}]}`, nil, "", "used twice"},
		{"bad decide args", "", []llms.ToolCall{call("decide", `{"action":`)}, "", "decide's arguments"},
		{"empty", "  ", nil, "", "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := parseDecision(tc.text, tc.calls)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || d.Action != tc.want {
				t.Fatalf("got %+v, %v; want %s", d, err, tc.want)
			}
		})
	}
	d, _ := parseDecision("", []llms.ToolCall{call("search", `{"q":"x"}`), call("calculator", `"{\"expression\":\"1+1\"}"`)})
	if len(d.ToolCalls) != 2 || d.ToolCalls[0].ID != "id_search" || string(d.ToolCalls[1].Args) != `{"expression":"1+1"}` {
		t.Errorf("direct calls = %+v", d.ToolCalls)
	}
}

// The supervisor parses whatever a model says: it must never panic, and a
// decision it accepts must be usable.
func FuzzParseDecision(f *testing.F) {
	f.Add(`{"action":"ANSWER"}`, "")
	f.Add(`{"action":"CREATE_WORKFLOW","workflow":[{"id":"a","tool":"t"},{"id":"b","tool":"t","depends_on":["a"]}]}`, "")
	f.Add("```json\n{\"action\":\"CLARIFY\",\"question\":\"q\"}\n```", "")
	f.Add("", `{"action":"CALL_TOOL","tool_calls":[{"tool":"x","args":"{}"}]}`)
	f.Add("hello", `not json`)
	f.Fuzz(func(t *testing.T, text, decideArgs string) {
		var calls []llms.ToolCall
		if decideArgs != "" {
			calls = []llms.ToolCall{call("decide", decideArgs)}
		}
		d, err := parseDecision(text, calls)
		if err != nil {
			return
		}
		if cerr := d.check(); cerr != nil && d.Action != ActionCallTool {
			t.Fatalf("accepted an unusable decision %+v: %v", d, cerr)
		}
		for _, c := range d.ToolCalls {
			if c.Tool == "" || !json.Valid(c.Args) {
				t.Fatalf("accepted a bad call %+v", c)
			}
		}
	})
}

func TestCited(t *testing.T) {
	chunks := []DataChunk{{Number: 1, Source: "a"}, {Number: 2, Source: "b"}, {Number: 3, Source: "c"}}
	got := cited("x [3] y [1] z [1] [9] [x]", chunks)
	if len(got) != 2 || got[0].Number != 1 || got[1].Number != 3 {
		t.Errorf("cited = %+v", got)
	}
	if got := cited("no refs", chunks); got == nil || len(got) != 0 {
		t.Errorf("no citations = %#v", got)
	}
}
