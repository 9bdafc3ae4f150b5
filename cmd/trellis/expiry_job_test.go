package main

import (
	"encoding/json"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

// A deadline job reads as it was written, and a job enqueued before
// elicitations had deadlines (an approval's, approval_id alone) still
// names its approval.
func TestExpiryJobArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args string
		kind store.HumanKind
		id   string
	}{
		{`{"user_id":"alice","approval_id":"ap_1"}`, store.KindApproval, "ap_1"},
		{mustJSON(t, newExpiryJob(store.KindApproval, "alice", "ap_2")), store.KindApproval, "ap_2"},
		{mustJSON(t, newExpiryJob(store.KindElicitation, "alice", "el_1")), store.KindElicitation, "el_1"},
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
