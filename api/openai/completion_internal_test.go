package openai

import (
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
)

// A run that waits on an approval and on a call that may have run names
// both, whichever its reason names first.
func TestWaitingNamesEveryKind(t *testing.T) {
	c := &completion{approvals: []*events.ApprovalRequired{{ApprovalID: "a1", Tool: "delete_file"}}}
	for _, reason := range []string{"approval", "uncertain_call"} {
		got := c.waiting(&events.RunInterrupted{Reason: reason, ApprovalIDs: []string{"a1"}, UncertainCallIDs: []string{"call_x"}})
		for _, want := range []string{"delete_file (approval id a1)", "uncertain call ids call_x", "/api/v1/uncertain-calls/"} {
			if !strings.Contains(got, want) {
				t.Errorf("reason %s: %q does not say %q", reason, got, want)
			}
		}
	}
}

// An approval with a deadline says when it expires and what happens then.
func TestWaitingNamesTheDeadline(t *testing.T) {
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	c := &completion{approvals: []*events.ApprovalRequired{{ApprovalID: "a1", Tool: "delete_file", ExpiresAt: &at, OnExpiry: events.ExpiryApprove}}}
	got := c.waiting(&events.RunInterrupted{Reason: "approval", ApprovalIDs: []string{"a1"}})
	if want := "delete_file (approval id a1; unanswered by 2031-05-06T07:08:09Z, it will be approved)"; !strings.Contains(got, want) {
		t.Errorf("%q does not say %q", got, want)
	}
}
