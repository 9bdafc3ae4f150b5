package nodes_test

import (
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// The offline model drives the whole graph: it calls real tools (CALL_TOOL),
// answers from their results, and is honest about everything else.
func TestOfflineModelThroughTheGraph(t *testing.T) {
	reg, err := llm.NewRegistry(llm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := testTools(t)
	agent, err := nodes.New(reg, tools, nil, nodes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		msg, tool string
		want      []string
	}{
		{"what is 2+2*3?", "calculator", []string{"2+2*3 = 8"}},
		{"what time is it in Tokyo?", "current_time", []string{"The current time in Asia/Tokyo is", "2025-03-15"}},
		{"what can you do?", "list_tools", []string{"Here are the tools I can use:", "- calculator", "- search"}},
		{"who are you?", "self_info", []string{"About me:", "Trellis"}},
		{"tell me a joke", "", []string{llm.OfflineNotice}},
	}
	for i, tc := range cases {
		t.Run(tc.msg, func(t *testing.T) {
			r := collect(agent.Run(t.Context(), "offline-"+string(rune('a'+i)), nodes.Input{Message: tc.msg}))
			if r.err != nil {
				t.Fatal(r.err)
			}
			tr := r.trace()
			if tc.tool != "" {
				wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
					+execute_tool tool.start:`+tc.tool+` tool.complete:`+tc.tool+` -execute_tool +reflect -reflect
					+synthesize -synthesize +write response.chunk* -write +stream response.done -stream run.completed`)
			} else if !strings.Contains(tr, "supervisor.decided:answer") || strings.Contains(tr, "tool.start") {
				t.Errorf("events: %s", tr)
			}
			done := last[*events.ResponseDone](r)
			for _, w := range tc.want {
				if !strings.Contains(done.Content, w) {
					t.Errorf("answer %q lacks %q", done.Content, w)
				}
			}
			if r.text() == "" || done.Usage.TotalTokens == 0 {
				t.Errorf("streamed %q, usage %+v", r.text(), done.Usage)
			}
		})
	}
}
