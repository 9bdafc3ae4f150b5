package nodes

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
)

// The supervisor's prompt is written into one presized buffer; it must
// read exactly as the system prompt around the instructions.
func TestSupervisorSystemPrompt(t *testing.T) {
	a := &Agent{opts: Options{SystemPrompt: "You help."}}
	a.chain = newChain([]Middleware{windowMiddleware{w: &a.opts.Window}, documentsMiddleware{}, cognitionMiddleware{}})
	s := &ChatState{
		Summary:       "- User: earlier",
		DataSummaries: []DataSummary{{DocumentID: "d1", Title: "Plan", Status: "ready", Summary: "the plan"}, {DocumentID: "d2", Summary: "notes"}},
		Cognitive:     "likes tables",
		Actions: []ActionRecord{
			{Iteration: 1, Action: ActionCallTool, Tools: []string{"search", "calculator"}},
			{Iteration: 2, Action: ActionAnswer},
		},
		Rejections:  1,
		Approvals:   []ApprovalRecord{{Tool: "delete_file", Args: json.RawMessage(`{"path":"x"}`), Decision: events.DecisionReject, Reason: "no"}},
		TaskContext: "try again",
	}
	got := a.supervisorSystem(s, 3, "- search [local]: Searches.\n")
	if want := a.system(s, NodeSupervisor, a.supervisorInstructions(s, 3, "- search [local]: Searches.\n")); got != want {
		t.Errorf("supervisorSystem\n got %q\nwant %q", got, want)
	}
	for _, line := range []string{
		"You help.\n\n## Earlier in this conversation (summary)\n- User: earlier\n\n## Documents in this conversation\n",
		"\n\n## Your task: decide the next step\n",
		"\n## Tools\n- search [local]: Searches.\n",
		"\n## Documents in this conversation\nThe user uploaded these documents (id, file name, status: summary). When the question may be answered by them, check them first",
		"- d1 (Plan) [ready]: the plan\n- d2: notes\n",
		"\n## About the user\nlikes tables\n",
		"\n## Progress\nThis is step 3 of at most 5 for this message.\n- step 1: CALL_TOOL search, calculator\n- step 2: ANSWER\n",
		"The user has rejected 1 proposed tool call(s) this turn; after 3 rejections you must stop proposing.\n" +
			"- rejected delete_file {\"path\":\"x\"}: no\nNote: try again\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("prompt lacks %q:\n%s", line, got)
		}
	}
}
