package agui

import (
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// A run that waits on an approval and on a call that may have run ends
// with an interrupt for each, whichever its reason names first.
func TestInterruptedNamesEveryKind(t *testing.T) {
	for _, reason := range []string{"approval", "uncertain_call"} {
		var last any
		tr := newTranslator(input{}, "c1", "r1", func(v any) error { last = v; return nil })
		tr.approvals = []events.ApprovalRequired{{ApprovalID: "a1", ToolCallID: "tc1", Tool: "delete_file"}}
		tr.uncertain["u1"] = events.ToolUncertain{UncertainCallID: "u1", ToolCallID: "tc2", Tool: "charge"}
		if err := tr.interrupted("k", &events.RunInterrupted{Reason: reason, ApprovalIDs: []string{"a1"}, UncertainCallIDs: []string{"u1"}}); err != nil {
			t.Fatal(err)
		}
		f, ok := last.(runFinished)
		if !ok {
			t.Fatalf("reason %s: last event %#v, want RUN_FINISHED", reason, last)
		}
		var got []string
		for _, in := range f.Outcome.Interrupts {
			got = append(got, in.ID+":"+in.Reason)
		}
		if len(got) != 2 || got[0] != "a1:tool_call" || got[1] != "u1:uncertain_call" {
			t.Errorf("reason %s: interrupts %v", reason, got)
		}
	}
}

// A run that stops while sub-agents and nodes run ends what is open,
// innermost first, before its last event: each sub-agent's steps, then
// the sub-agent (suspended when the run waits for a person, an error
// otherwise), then the agent's own steps. A nested sub-agent names its
// parent and the call that started it.
func TestStopEndsWhatIsOpen(t *testing.T) {
	for _, c := range []struct {
		status string
		want   []string
	}{
		{"failed", []string{"SUBAGENT_ERROR a:c1/b:c2", "STEP_FINISHED supervisor a:c1", "SUBAGENT_ERROR a:c1", "STEP_FINISHED execute_tool ", "RUN_ERROR"}},
		{"interrupted", []string{"SUBAGENT_FINISHED a:c1/b:c2 suspended", "STEP_FINISHED supervisor a:c1", "SUBAGENT_FINISHED a:c1 suspended",
			"STEP_FINISHED execute_tool ", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"}},
	} {
		var got []string
		var nested subagentStarted
		tr := newTranslator(input{}, "c1", "r1", func(v any) error {
			switch e := v.(type) {
			case step:
				got = append(got, e.Type+" "+e.StepName+" "+e.SubagentRunID)
			case subagentStarted:
				nested = e
				got = append(got, e.Type+" "+e.SubagentRunID)
			case subagentFinished:
				got = append(got, e.Type+" "+e.SubagentRunID+" "+e.Outcome.Type)
			case subagentError:
				got = append(got, e.Type+" "+e.SubagentRunID)
			case runError:
				got = append(got, e.Type)
			case messagesSnapshot:
				got = append(got, e.Type)
			case stateSnapshot:
				got = append(got, e.Type)
			case runFinished:
				got = append(got, e.Type)
			}
			return nil
		})
		must(t, tr.startStep("", "execute_tool"))
		must(t, tr.openSubagent("a:c1", "a", "a job"))
		must(t, tr.startStep("a:c1", "supervisor"))
		must(t, tr.startStep("a:c1", "supervisor")) // already open: not named twice
		must(t, tr.openSubagent("a:c1/b:c2", "", ""))
		if nested.ParentSubagentRunID != "a:c1" || nested.ParentToolCallID != "c2" || nested.Name != "b" {
			t.Errorf("the nested sub-agent %+v", nested)
		}
		got = got[:0]
		if c.status == "failed" {
			must(t, tr.fail("boom", "model_error"))
		} else {
			tr.approvals = []events.ApprovalRequired{{ApprovalID: "a1", ToolCallID: "tc1", Tool: "delete_file"}}
			must(t, tr.interrupted("k", &events.RunInterrupted{Reason: "approval", ApprovalIDs: []string{"a1"}}))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q\nwant %q", c.status, got, c.want)
		}
	}
}

// A tool's progress is its tool_progress activity, replaced as it goes.
func TestToolProgressIsAnActivity(t *testing.T) {
	var got []activitySnapshot
	tr := newTranslator(input{}, "c1", "r1", func(v any) error {
		if a, ok := v.(activitySnapshot); ok {
			got = append(got, a)
		}
		return nil
	})
	must(t, tr.progress("", &events.ToolProgress{ToolCallID: "tc1", Progress: 1, Total: 4, Message: "one of four"}))
	must(t, tr.progress("a:c1", &events.ToolProgress{ToolCallID: "tc2", Progress: 0.5}))
	if len(got) != 2 || got[0].MessageID != "tc1-progress" || got[0].ActivityType != "tool_progress" || !got[0].Replace ||
		got[0].Content != (progress{ToolCallID: "tc1", Progress: 1, Total: 4, Message: "one of four"}) || got[1].SubagentRunID != "a:c1" {
		t.Errorf("activities %+v", got)
	}
}

// A workspace file's change is its file activity, replaced by the next
// change of the same file, also from a sub-agent.
func TestFileChangedIsAnActivity(t *testing.T) {
	var got []activitySnapshot
	tr := newTranslator(input{}, "c1", "r1", func(v any) error {
		if a, ok := v.(activitySnapshot); ok {
			got = append(got, a)
		}
		return nil
	})
	for _, d := range []*events.FileChanged{
		{Scope: "conversation", ScopeID: "c1", Path: "notes.md", Version: 1, Op: "write"},
		{Scope: "conversation", ScopeID: "c1", Path: "notes.md", Version: 2, Op: "edit"},
		{Scope: "user", ScopeID: "u1", Path: "notes.md", Version: 1, Op: "write"},
	} {
		if _, err := tr.event(&runs.Event{Event: &store.Event{Type: "file.changed"}, Payload: d}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 3 || got[0].ActivityType != "file" || !got[0].Replace || got[0].MessageID != got[1].MessageID ||
		got[1].MessageID == got[2].MessageID || got[1].Content.(*events.FileChanged).Version != 2 {
		t.Errorf("activities %+v", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
