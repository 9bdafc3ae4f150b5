package main

import (
	"syscall"
	"testing"
)

// An approval's deadline is kept by whichever process is alive: process
// A stops a run on an approval of the count server's write that expires
// with approve — parked (a sync chat), or waiting on its open stream —
// and is killed before the deadline. On SQLite B is started
// on the same data directory (one process at a time); on PostgreSQL B
// and C share the database with A from the start. At the deadline the
// approval expires once: one approval.expired, the tool runs exactly
// once, and the run completes.
func TestCrashBeforeAnApprovalsDeadline(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		for _, mode := range []string{"parked", "waiting"} {
			t.Run(db+"/"+mode, func(t *testing.T) {
				e := newCrashEnv(t, db)
				e.env = append(e.env, "TRELLIS_APPROVAL_TIMEOUT=6s", "TRELLIS_APPROVAL_EXPIRY=approve", "TRELLIS_CLAIM_INTERVAL=200ms")
				var peers []*child
				if db == "postgres" {
					peers = append(peers, e.start(), e.start())
				}
				a := e.startConnected()
				var approval map[string]any
				var conv, runID string
				if mode == "parked" {
					res := syncChat(t, a, map[string]any{"message": "write a note"})
					approval = pendingApproval(t, res)
					conv, runID = res["conversation_id"].(string), res["run_id"].(string)
				} else {
					resp := a.do("POST", "/api/v1/chat", map[string]any{"message": "write a note"})
					conv, runID = resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
					seen := sseEvents(t, resp, func(ev event) bool { return ev.typ == "approval.required" })
					approval = seen[len(seen)-1].data
				}
				if approval["tool"] != "write" || approval["on_expiry"] != "approve" || approval["expires_at"] == nil {
					t.Fatalf("the approval %v, want write's, expiring with approve", approval)
				}
				a.stop(syscall.SIGKILL)
				if n := e.effects("write"); n != 0 {
					t.Fatalf("the tool ran %d times before its deadline", n)
				}
				if db == "sqlite" {
					peers = append(peers, e.startConnected())
				}
				evs := runEvents(t, peers[0], conv, runID, "run.completed", "run.failed", "run.cancelled")
				if got := of(evs, "approval.expired"); len(got) != 1 || got[0].data["approval_id"] != approval["approval_id"] {
					t.Errorf("approval.expired: %v; events %v", got, types(evs))
				}
				if last := evs[len(evs)-1].typ; last != "run.completed" {
					t.Errorf("the run ended with %s; events %v", last, types(evs))
				}
				if n := e.effects("write n1"); n != 1 {
					t.Errorf("the tool approved at its deadline ran %d times, want once", n)
				}
				for i, ev := range evs {
					if ev.id != int64(i+1) {
						t.Fatalf("event %d has seq %d; events %v", i, ev.id, types(evs))
					}
				}
			})
		}
	}
}
