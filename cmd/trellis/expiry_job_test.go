package main

import (
	"encoding/json"
	"testing"

	"github.com/trellis-ai/trellis/events"
)

// A deadline job reads as it was written, and a job enqueued before
// elicitations had deadlines (an approval's, approval_id alone) still
// names its approval.
func TestExpiryJobArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args string
		kind events.PendingKind
		id   string
	}{
		{`{"user_id":"alice","approval_id":"ap_1"}`, events.PendingApproval, "ap_1"},
		{mustJSON(t, newExpiryJob(events.PendingApproval, "alice", "ap_2")), events.PendingApproval, "ap_2"},
		{mustJSON(t, newExpiryJob(events.PendingElicitation, "alice", "el_1")), events.PendingElicitation, "el_1"},
	} {
		var j expiryJob
		if err := json.Unmarshal([]byte(c.args), &j); err != nil {
			t.Fatal(err)
		}
		if kind, id := j.request(); kind != c.kind || id != c.id || j.UserID != "alice" {
			t.Errorf("%s: %s %s of %s, want %s %s", c.args, kind, id, j.UserID, c.kind, c.id)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
