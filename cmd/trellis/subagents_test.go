package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// subagentsEnv is crashEnv with the sub-agents script and two sub-agents:
// a researcher that may only log (no approval), and a writer that may
// only write (which needs approval).
func subagentsEnv(t *testing.T, db string) *crashEnv {
	t.Helper()
	e := newCrashEnv(t, db)
	script, err := filepath.Abs("testdata/subagents.json")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "subagents.json")
	if err := os.WriteFile(file, []byte(`{"agents": [
		{"name": "researcher", "description": "looks things up and logs them", "tools": ["log"]},
		{"name": "writer", "description": "writes notes", "system_prompt": "You write notes.", "tools": ["write"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.env = append(e.env, "TRELLIS_MODEL=scripted:"+script, "TRELLIS_SUBAGENTS="+file)
	return e
}

// A supervisor delegates to two sub-agents at once; the writer's call
// needs an approval, which surfaces on the parent's stream and pending
// list. The process is killed while the writer waits; the next process
// lists the same approval, and answering it finishes the whole tree,
// with no tool run twice.
func TestSubagentsApprovalSurvivesACrash(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := subagentsEnv(t, db)
			first := e.startConnected()
			resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "plan the launch"})
			conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
			seen := sseEvents(t, resp, func(ev event) bool { return ev.typ == "approval.required" })
			req := seen[len(seen)-1]
			approval, _ := req.data["approval_id"].(string)
			if approval == "" || req.data["tool"] != "write" || req.data["namespace"] != "writer:call_w" {
				t.Fatalf("no approval of the writer's write: %+v", req)
			}
			starts, researcherDone := map[string]string{}, false
			for _, ev := range seen {
				switch ev.typ {
				case "subagent.start":
					starts[ev.data["subagent"].(string)], _ = ev.data["namespace"].(string)
				case "subagent.end":
					researcherDone = researcherDone || (ev.data["subagent"] == "researcher" && ev.data["namespace"] == "researcher:call_r" && ev.data["status"] == "completed")
				case "tool.complete":
					if ev.data["tool"] == "log" && ev.data["namespace"] != "researcher:call_r" {
						t.Errorf("the researcher's log carries namespace %v", ev.data["namespace"])
					}
				}
			}
			if starts["researcher"] != "researcher:call_r" || starts["writer"] != "writer:call_w" || !researcherDone {
				t.Fatalf("sub-agents: starts %v, researcher done %v", starts, researcherDone)
			}
			if ids := pendingIDs(t, first, "approvals", conv); len(ids) != 1 || ids[0] != approval {
				t.Fatalf("pending approvals: %v, want [%s]", ids, approval)
			}
			first.stop(syscall.SIGKILL) // the writer waits for its approval

			second := e.startConnected()
			runStatus(t, second, conv, "interrupted")
			if ids := pendingIDs(t, second, "approvals", conv); len(ids) != 1 || ids[0] != approval {
				t.Fatalf("pending approvals after a crash: %v, want [%s]", ids, approval)
			}
			if n := e.effects("write"); n != 0 {
				t.Fatalf("the writer's gated tool ran %d times with nobody approving it", n)
			}
			if r := second.do("POST", "/api/v1/approvals/"+approval, map[string]any{"decision": "approve"}); r.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(r.Body)
				t.Fatalf("approve: %d %s", r.StatusCode, b)
			}
			seen = followToEnd(t, second, conv, runID, seen)
			if n, m := e.effects("log r1"), e.effects("write w1"); n != 1 || m != 1 {
				t.Errorf("effects: log %d, write %d; want each once", n, m)
			}
			var answer string
			for _, ev := range seen {
				if ev.typ == "response.done" {
					if ev.data["namespace"] != nil {
						t.Errorf("a sub-agent's response.done reached the stream: %v", ev.data)
					}
					answer, _ = ev.data["content"].(string)
				}
			}
			if answer != "All done." {
				t.Errorf("answer %q", answer)
			}
			second.stop(syscall.SIGTERM)
		})
	}
}

// A token budget reached mid-workflow — the researcher done, the
// supervisor not — ends the run honestly, and response.done shows the
// use against the budget.
func TestSubagentsBudgetEndsHonestly(t *testing.T) {
	t.Parallel()
	e := subagentsEnv(t, "sqlite")
	c := e.startConnected()
	resp := c.do("POST", "/api/v1/chat", map[string]any{"message": "the budgeted launch", "budget": map[string]any{"max_tokens": 350}})
	seen := sseEvents(t, resp, nil)
	var done map[string]any
	for _, ev := range seen {
		if ev.typ == "response.done" {
			done = ev.data
		}
	}
	if done == nil || seen[len(seen)-1].typ != "run.completed" {
		t.Fatalf("events %v", seen)
	}
	b, _ := done["budget"].(map[string]any)
	limits, _ := b["limits"].(map[string]any)
	if b["exceeded"] != "tokens" || b["tokens"] != float64(400) || limits["max_tokens"] != float64(350) || b["tool_calls"] != float64(2) {
		t.Errorf("budget %v", b)
	}
	content, _ := done["content"].(string)
	for _, want := range []string{"budget", "Done before the budget ran out:", "- task: Logged r1.", "Not done"} {
		if !strings.Contains(content, want) {
			t.Errorf("answer lacks %q:\n%s", want, content)
		}
	}
	if n := e.effects("log r1"); n != 1 {
		t.Errorf("log ran %d times", n)
	}
	// A negative limit is refused.
	for _, bad := range []map[string]any{{"max_tokens": -1}, {"max_tool_calls": -2}, {"max_seconds": -0.5}, {"tokens": 5}} {
		if r := c.do("POST", "/api/v1/chat/sync", map[string]any{"message": "x", "budget": bad}); r.StatusCode != http.StatusBadRequest {
			t.Errorf("budget %v: %d, want 400", bad, r.StatusCode)
		}
	}
	c.stop(syscall.SIGTERM)
}
