package api_test

import (
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/store"
)

// janitorsScript: the supervisor sends two janitors at once, each to
// delete a file of its own, and each delete_file needs an approval: the
// run waits for both at once.
const janitorsScript = `{"steps": [
	{"match": {"node": "supervisor", "contains": "clean both", "tool_result": false},
	 "reply": {"tool_calls": [
		{"id": "call_a", "name": "task", "args": {"agent": "janitor", "task": "delete /tmp/a.txt"}},
		{"id": "call_b", "name": "task", "args": {"agent": "janitor", "task": "delete /tmp/b.txt"}}]}, "repeat": true},
	{"match": {"node": "supervisor", "contains": "delete /tmp/a.txt", "tool_result": false},
	 "reply": {"tool_calls": [{"name": "delete_file", "args": {"path": "/tmp/a.txt"}}]}, "repeat": true},
	{"match": {"node": "supervisor", "contains": "delete /tmp/b.txt", "tool_result": false},
	 "reply": {"tool_calls": [{"name": "delete_file", "args": {"path": "/tmp/b.txt"}}]}, "repeat": true},
	{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}, "repeat": true},
	{"match": {"node": "write"}, "reply": {"text": "Done."}, "repeat": true}
]}`

// newJanitorsEnv is a server whose runs park at once on what they wait
// for, with janitor sub-agents driven by janitorsScript.
func newJanitorsEnv(t *testing.T, b backend) *env {
	t.Helper()
	return newEnv(t, envOptions{backend: b, script: janitorsScript, configure: func(c *apitest.Config) {
		c.Runs.InterruptAfter = -1
		c.Runs.Agent.SubAgents = nodes.SubAgents{Agents: []nodes.SubAgent{
			{Name: "janitor", Description: "deletes files", Tools: []string{"delete_file"}}}}
	}})
}

// TestBatchAnswers: a run waiting on two approvals at once (parallel
// sub-agents) is answered in one request, each approval with its own
// decision; a batch with one bad answer is refused whole and changes
// nothing.
func TestBatchAnswers(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			noLeaks(t)
			e := newJanitorsEnv(t, b)
			s := e.chat(map[string]any{"message": "clean both"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			parked := s.until("run.interrupted")
			s.close()
			var ids []string
			paths := map[string]string{}
			waitFor(t, "two pending approvals", func() bool {
				p, err := e.store.PendingHumanRequests(t.Context(), events.PendingApproval, "alice", conv, store.Page{})
				if err != nil {
					t.Fatal(err)
				}
				ids = ids[:0]
				for _, a := range p.Requests {
					ids = append(ids, a.ID)
					paths[a.ID] = string(a.Approval.Args)
				}
				return len(ids) == 2
			})
			path := "/api/v1/conversations/" + conv + "/runs/" + runID + "/answers"
			before := e.snapshot()
			for _, bad := range []struct {
				name   string
				path   string
				body   any
				status int
			}{
				{"a bad decision", path, []map[string]any{{"approval_id": ids[0], "decision": "approve"}, {"approval_id": ids[1], "decision": "maybe"}}, http.StatusBadRequest},
				{"an approval twice", path, []map[string]any{{"approval_id": ids[0], "decision": "approve"}, {"approval_id": ids[0], "decision": "reject"}}, http.StatusBadRequest},
				{"an unknown approval", path, []map[string]any{{"approval_id": ids[0], "decision": "approve"}, {"approval_id": "nope", "decision": "approve"}}, http.StatusNotFound},
				{"another run", "/api/v1/conversations/" + conv + "/runs/other/answers", []map[string]any{{"approval_id": ids[0], "decision": "approve"}}, http.StatusNotFound},
				{"nothing", path, []map[string]any{}, http.StatusBadRequest},
			} {
				status, body := e.do("POST", bad.path, map[string]any{"answers": bad.body})
				if status != bad.status {
					t.Errorf("%s: %d %s, want %d", bad.name, status, body, bad.status)
				}
			}
			status, body := e.doAs(bobKey, "POST", path, map[string]any{"answers": []map[string]any{{"approval_id": ids[0], "decision": "approve"}}})
			wantError(t, status, body, http.StatusNotFound)
			if after := e.snapshot(); after != before {
				t.Fatalf("a refused batch changed the store:\n%s\n%s", before, after)
			}

			w := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey, "Last-Event-ID", strconv.FormatInt(parked.ID, 10)))
			status, body = e.do("POST", path, map[string]any{"answers": []map[string]any{
				{"approval_id": ids[0], "decision": "approve"}, {"approval_id": ids[1], "decision": "reject", "reason": "keep it"}}})
			if status != http.StatusOK {
				t.Fatalf("the batch: %d %s", status, body)
			}
			got := jsonOf[struct {
				Status  string
				RunID   string `json:"run_id"`
				Answers []struct {
					ApprovalID string `json:"approval_id"`
					Decision   string
				}
			}](t, body)
			if got.Status != "processed" || got.RunID != runID || len(got.Answers) != 2 || got.Answers[1].Decision != "reject" {
				t.Errorf("the batch answered %s", body)
			}
			evs := w.all()
			if last := evs[len(evs)-1]; last.Type != "run.completed" {
				t.Fatalf("the resumed run: %v", types(evs))
			}
			resolved := map[string]string{}
			for _, ev := range evs {
				if ev.Type == "approval.resolved" {
					resolved[ev.str("approval_id")] = ev.str("decision")
				}
			}
			if resolved[ids[0]] != "approve" || resolved[ids[1]] != "reject" {
				t.Errorf("approval.resolved: %v", resolved)
			}
			var deleted []string
			for len(e.tools.deleted) > 0 {
				deleted = append(deleted, <-e.tools.deleted)
			}
			if want := []string{pathOf(t, paths[ids[0]])}; !slices.Equal(deleted, want) {
				t.Errorf("deleted %v, want %v (the approved one only)", deleted, want)
			}
			status, body = e.do("POST", path, map[string]any{"answers": []map[string]any{{"approval_id": ids[1], "decision": "approve"}}})
			wantError(t, status, body, http.StatusConflict)
			e.close()
		})
	}
}

// pathOf is the path of delete_file's arguments.
func pathOf(t *testing.T, args string) string {
	return jsonOf[struct{ Path string }](t, []byte(args)).Path
}
