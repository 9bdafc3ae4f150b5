package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestTaskBoardAcrossARestart: through `trellis serve` on SQLite and
// PostgreSQL, the scripted agent writes its board; the server restarts;
// a user edits the board; the agent's next supervisor call is told the
// edited board (its script step matches only a system prompt holding the
// edit, so the run would fail otherwise).
func TestTaskBoardAcrossARestart(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("../../api/testdata/tasks.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			env := []string{"TRELLIS_MODEL=scripted:" + script}
			if db == "sqlite" {
				env = append(env, "TRELLIS_DATA_DIR="+t.TempDir())
			} else {
				env = append(env, "DATABASE_URL="+pgDSN(t))
			}
			first := startServe(t, env...)
			resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "plan the launch"})
			conv := resp.Header.Get("X-Conversation-ID")
			seen := sseEvents(t, resp, nil)
			if last := seen[len(seen)-1]; last.typ != "run.completed" {
				t.Fatalf("the planning run ended with %s", last.typ)
			}
			first.stop(syscall.SIGTERM)

			second := startServe(t, env...)
			r := second.do("PATCH", "/api/v1/conversations/"+conv+"/tasks/t2",
				map[string]any{"title": "Write the announcement (short)", "status": "done", "position": 0})
			body, _ := io.ReadAll(r.Body)
			if r.StatusCode != http.StatusOK {
				t.Fatalf("PATCH: %d %s", r.StatusCode, body)
			}
			// The answer is the edited task, at its new place.
			var task map[string]any
			if err := json.Unmarshal(body, &task); err != nil || len(task) != 5 || task["id"] != "t2" || task["position"] != 0.0 ||
				task["status"] != "done" || task["title"] != "Write the announcement (short)" || task["owner"] != "agent" {
				t.Fatalf("PATCH answered %s %v", body, err)
			}
			r = second.do("GET", "/api/v1/conversations/"+conv+"/tasks", nil)
			body, _ = io.ReadAll(r.Body)
			var board struct {
				Tasks []struct {
					ID       string
					Position int
				}
				Revision int
			}
			if err := json.Unmarshal(body, &board); err != nil || board.Revision != 2 || len(board.Tasks) != 3 || board.Tasks[0].ID != "t2" ||
				board.Tasks[1].ID != "t1" || board.Tasks[1].Position != 1 || board.Tasks[2].Position != 2 {
				t.Fatalf("the board after the edit: %s %v", body, err)
			}
			seen = sseEvents(t, second.do("POST", "/api/v1/chat", map[string]any{"message": "go on", "conversation_id": conv}), nil)
			var typs []string
			for _, e := range seen {
				typs = append(typs, e.typ)
			}
			last := seen[len(seen)-1]
			if last.typ != "run.completed" {
				t.Fatalf("the next run did not see the edited board: %v %v", typs, last.data)
			}
			answer := ""
			for _, e := range seen {
				if e.typ == "response.done" {
					answer, _ = e.data["content"].(string)
				}
			}
			if !strings.Contains(answer, "Following the plan.") {
				t.Errorf("the answer %q; events %v", answer, typs)
			}
			second.stop(syscall.SIGTERM)
		})
	}
}
