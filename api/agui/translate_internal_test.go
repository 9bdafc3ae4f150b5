package agui

import (
	"testing"

	"github.com/trellis-ai/trellis/events"
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
