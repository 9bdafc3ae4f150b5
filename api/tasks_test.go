package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/llm"
)

// scriptedWith replaces the env's models with one scripted model playing
// testdata/<script>, returned for its calls.
func scriptedWith(t testing.TB, script string) (*llm.Scripted, func(*apitest.Config)) {
	t.Helper()
	sc, err := llm.LoadScript("testdata/" + script)
	if err != nil {
		t.Fatal(err)
	}
	model := llm.NewScripted(sc)
	models, err := llm.NewRegistry(llm.Config{
		Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: model, ToolCalling: true}},
		Resilience: llm.ResilienceConfig{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return model, func(c *apitest.Config) { c.Runs.Models = models }
}

type taskBody struct {
	ID, Title, Status, Owner string
	Position                 int
}

type boardBody struct {
	Tasks    []taskBody
	Revision int
}

func (b boardBody) line() string {
	var parts []string
	for _, t := range b.Tasks {
		parts = append(parts, t.ID+"="+t.Status+":"+t.Title+"@"+t.Owner)
	}
	return strings.Join(parts, " | ")
}

// taskKeys is API.md's task object: these fields, no others.
var taskKeys = []string{"id", "owner", "position", "status", "title"}

// checkTask fails t unless task (a decoded JSON object) has exactly
// API.md's fields.
func checkTask(t testing.TB, what string, task any) {
	t.Helper()
	m, ok := task.(map[string]any)
	if !ok {
		t.Errorf("%s: %v is not an object", what, task)
		return
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, taskKeys) {
		t.Errorf("%s: task fields %v, want %v", what, keys, taskKeys)
	}
}

// checkBoard fails t unless the board's tasks have exactly API.md's
// fields and each task's position is its place on the board.
func checkBoard(t testing.TB, what string, tasks []any) {
	t.Helper()
	for i, task := range tasks {
		checkTask(t, what, task)
		if m, _ := task.(map[string]any); m["position"] != float64(i) {
			t.Errorf("%s: task %d has position %v", what, i, m["position"])
		}
	}
}

// TestTaskBoardAPI: the agent's write_todos shows in tasks.updated and
// GET …/tasks; PATCH validates strictly, is 404 for another user and 409
// while a run waits; a user's edit is in the supervisor's next prompt.
func TestTaskBoardAPI(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			model, configure := scriptedWith(t, "tasks.json")
			e := newEnv(t, envOptions{backend: b, configure: configure, approval: []string{"calculator"}})

			s := e.chat(map[string]any{"message": "plan the launch"})
			conv := s.header("X-Conversation-ID")
			up := s.until("tasks.updated")
			if n := len(up.Data["tasks"].([]any)); n != 3 || up.Data["revision"] != 1.0 {
				t.Errorf("tasks.updated %s", up.Raw)
			}
			checkBoard(t, "tasks.updated", up.Data["tasks"].([]any))
			s.until("run.completed")
			tasks := "/api/v1/conversations/" + conv + "/tasks"

			status, body := e.do("GET", tasks, nil)
			if status != http.StatusOK {
				t.Fatalf("GET tasks: %d %s", status, body)
			}
			want := "t1=in_progress:Pick a date@agent | t2=pending:Write the announcement@agent | t3=pending:Tell the team@herald"
			if got := jsonOf[boardBody](t, body); got.line() != want || got.Revision != 1 {
				t.Errorf("GET tasks = %s", body)
			}
			checkBoard(t, "GET tasks", jsonOf[struct{ Tasks []any }](t, body).Tasks)

			// Bad bodies: 4xx with API.md's error, and nothing changes.
			for _, bad := range []struct {
				body   string
				status int
			}{
				{`{}`, 400}, {`{"status":"later"}`, 400}, {`{"title":""}`, 400}, {`{"title":"  "}`, 400},
				{`{"title":null}`, 400}, {`{"position":-1}`, 400}, {`{"position":1.5}`, 400}, {`{"position":"1"}`, 400},
				{`{"colour":"red"}`, 400}, {`{"title":"` + strings.Repeat("x", 201) + `"}`, 400}, {`[`, 400},
			} {
				st, body := e.do("PATCH", tasks+"/t2", bad.body)
				wantError(t, st, body, bad.status)
			}
			st, body := e.do("PATCH", tasks+"/t9", `{"status":"done"}`)
			wantError(t, st, body, http.StatusNotFound)
			// Bob sees neither Alice's board nor can he edit it.
			st, body = e.doAs(bobKey, "GET", tasks, nil)
			wantError(t, st, body, http.StatusNotFound)
			st, body = e.doAs(bobKey, "PATCH", tasks+"/t2", `{"status":"done"}`)
			wantError(t, st, body, http.StatusNotFound)

			// While a run waits for an approval, the board is the run's.
			s = e.chat(map[string]any{"message": "calculate 2+2", "conversation_id": conv})
			s.until("approval.required")
			st, body = e.do("PATCH", tasks+"/t2", `{"status":"done"}`)
			wantError(t, st, body, http.StatusConflict)
			if st, body := e.do("POST", "/api/v1/conversations/"+conv+"/cancel", nil); st != http.StatusOK && st != http.StatusAccepted {
				t.Fatalf("cancel: %d %s", st, body)
			}
			var patched []byte
			waitFor(t, "the cancel", func() bool {
				st, body := e.do("PATCH", tasks+"/t2", `{"title":"Write the announcement (short)","status":"done","position":0}`)
				patched = body
				return st == http.StatusOK
			})
			// The answer is the task after the edit, at its new place.
			if got, want := jsonOf[taskBody](t, patched), (taskBody{ID: "t2", Title: "Write the announcement (short)", Status: "done", Owner: "agent", Position: 0}); got != want {
				t.Errorf("PATCH answered %s, want %+v", patched, want)
			}
			var raw any
			if err := json.Unmarshal(patched, &raw); err != nil {
				t.Fatal(err)
			}
			checkTask(t, "PATCH", raw)
			status, body = e.do("GET", tasks, nil)
			want = "t2=done:Write the announcement (short)@agent | t1=in_progress:Pick a date@agent | t3=pending:Tell the team@herald"
			if got := jsonOf[boardBody](t, body); status != http.StatusOK || got.line() != want || got.Revision != 2 {
				t.Errorf("after the edit: %d %s", status, body)
			}
			checkBoard(t, "GET tasks after the edit", jsonOf[struct{ Tasks []any }](t, body).Tasks)

			// A move to the end (or past it) answers the task's new place.
			st, body = e.do("PATCH", tasks+"/t2", `{"position":7}`)
			if got := jsonOf[taskBody](t, body); st != http.StatusOK || got.ID != "t2" || got.Position != 2 || got.Status != "done" {
				t.Errorf("PATCH position 7: %d %s", st, body)
			}
			st, body = e.do("PATCH", tasks+"/t2", `{"position":0}`)
			if got := jsonOf[taskBody](t, body); st != http.StatusOK || got.Position != 0 {
				t.Errorf("PATCH position 0: %d %s", st, body)
			}

			// The agent's next turn sees the user's edit.
			s = e.chat(map[string]any{"message": "go on", "conversation_id": conv})
			s.until("run.completed")
			var prompt string
			for _, c := range model.Calls() {
				if c.Node == "supervisor" && c.LastHuman == "go on" {
					prompt = c.System
				}
			}
			if !strings.Contains(prompt, "- [done] t2: Write the announcement (short)\n- [in_progress] t1: Pick a date\n- [pending] t3: Tell the team (owner: herald)\n") {
				t.Errorf("the supervisor's prompt after the edit:\n%s", prompt)
			}
		})
	}
}

// TestAgentGraph: GET /agent/graph is the engine's drawing of the agent.
// A task edited while its conversation is being deleted is refused as
// in a deleted conversation, and writes no state after the delete.
func TestTaskEditWhileDeleting(t *testing.T) {
	held := &heldDelete{}
	_, configure := scriptedWith(t, "tasks.json")
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) {
		configure(c)
		held.configure(c)
	}, approval: []string{"calculator"}})
	s := e.chat(map[string]any{"message": "plan the launch"})
	conv := s.header("X-Conversation-ID")
	s.until("run.completed")
	held.during(t, e, conv, func() {
		st, body := e.do("PATCH", "/api/v1/conversations/"+conv+"/tasks/t2", `{"status":"done"}`)
		wantError(t, st, body, http.StatusNotFound)
	})
}

func TestAgentGraph(t *testing.T) {
	e := newEnv(t, envOptions{})
	status, body := e.do("GET", "/api/v1/agent/graph", nil)
	g := jsonOf[struct{ Mermaid string }](t, body)
	if status != http.StatusOK || g.Mermaid != e.srv.Runs().Mermaid() || !strings.Contains(g.Mermaid, "supervisor -.->|call_tool| execute_tool") {
		t.Errorf("GET /agent/graph: %d %s", status, body)
	}
}
