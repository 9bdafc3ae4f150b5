package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
)

// A chat of the AI SDK whose run a crash cut inside a call that may
// have run: the page, loaded again (useChat's resumeStream, ai 7), is
// shown the call as an approval request whose id is the uncertain
// call's; approved, the call runs once more and its result shows;
// denied, it is skipped and shows as denied.
func TestCrashAISDKShowsAndAnswersAnUncertainCall(t *testing.T) {
	t.Parallel()
	dir := clientDir(t, "../../api/aisdk/testdata", "ai")
	node := filepath.Join(dir, "node_modules", "node22", "bin", "node") // ai 7 needs Node 22
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			release := e.holdCalls()
			first := e.startConnected()
			chats := []struct{ id, note, answer string }{
				{"chat-alpha-" + db, "alpha", "approve"},
				{"chat-beta-" + db, "beta", "deny"},
			}
			for _, c := range chats {
				resp := first.do("POST", "/api/ai-sdk/chat", map[string]any{"id": c.id, "trigger": "submit-message",
					"messages": []map[string]any{{"id": "m1", "role": "user", "parts": []map[string]any{{"type": "text", "text": "charge " + c.note}}}}})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: %d", c.note, resp.StatusCode)
				}
				e.awaitEffects("charge "+c.note+" ", 1)
			}
			first.stop(syscall.SIGKILL) // each charge is inside its call, its side effect done
			release()

			second := e.start()
			for _, c := range chats {
				runStatus(t, second, c.id, "interrupted")
				ids := pendingIDs(t, second, "uncertain_calls", c.id)
				if len(ids) != 1 {
					t.Fatalf("%s: uncertain calls %v, want one", c.note, ids)
				}
				var r aisdkReport
				runClient(t, node, dir, "aisdk.mjs", &r, "7", second.url, "uncertain", c.id, "charge "+c.note, c.answer)
				if r.Failed != "" || r.Error != "" || len(r.Warnings) > 0 {
					t.Fatalf("%s: failed %q, error %q, warnings %q; messages %+v", c.note, r.Failed, r.Error, r.Warnings, r.Messages)
				}
				if len(r.Shown) != 2 || len(r.Shown[1].Tools) != 1 || r.Shown[1].Tools[0].ToolName != "charge" ||
					r.Shown[1].Tools[0].State != "approval-requested" {
					t.Errorf("%s: the reloaded page shows %+v, want the charge call asking for approval", c.note, r.Shown)
				}
				if len(r.Rounds) != 1 || r.Rounds[0].ApprovalID != ids[0] || r.Rounds[0].AskedID != r.Rounds[0].AnsweredID {
					t.Errorf("%s: rounds %+v, want the approval %s answered in the message that asked", c.note, r.Rounds, ids[0])
				}
				if len(r.Messages) != 2 || len(r.Messages[1].Tools) != 1 || r.Messages[1].Text != "Done." {
					t.Fatalf("%s: messages %+v", c.note, r.Messages)
				}
				tool := r.Messages[1].Tools[0]
				lines := e.effectLines("charge " + c.note + " ")
				switch c.answer {
				case "approve":
					if tool.State != "output-available" || tool.Output != "charge done: alpha" {
						t.Errorf("approved: the call shows %+v, want its result", tool)
					}
					if len(lines) != 2 || lines[0] != lines[1] {
						t.Errorf("approved: side effects %q, want two, with one idempotency key", lines)
					}
				case "deny":
					if tool.State != "output-denied" {
						t.Errorf("denied: the call shows %+v, want it denied", tool)
					}
					if len(lines) != 1 {
						t.Errorf("denied: side effects %q, want the one before the crash", lines)
					}
				}
				if pending := pendingIDs(t, second, "uncertain_calls", c.id); len(pending) != 0 {
					t.Errorf("%s: still pending %v", c.note, pending)
				}
				if got := runStatuses(t, second, c.id); len(got) != 1 || got[0] != "completed" {
					t.Errorf("%s: runs %v, want the one run completed", c.note, got)
				}
				seen := sseEvents(t, second.do("GET", "/api/v1/conversations/"+c.id+"/stream?after=0", nil), nil)
				runID, _ := seen[0].data["run_id"].(string)
				var resolved []string
				for _, ev := range followToEnd(t, second, c.id, runID, seen) {
					if ev.typ == "uncertain_call.resolved" {
						resolved = append(resolved, fmt.Sprint(ev.data["uncertain_call_id"], " ", ev.data["tool_call_id"], " ", ev.data["decision"]))
					}
				}
				want := map[string]string{"approve": "retry", "deny": "skip"}[c.answer]
				if len(resolved) != 1 || resolved[0] != ids[0]+" "+tool.ToolCallID+" "+want {
					t.Errorf("%s: uncertain_call.resolved %q, want one, of %s (call %s), %s", c.note, resolved, ids[0], tool.ToolCallID, want)
				}
			}
			second.stop(syscall.SIGTERM)
		})
	}
}
