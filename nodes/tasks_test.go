package nodes_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// boardScript: turn 1 plans three tasks with write_todos, then answers;
// turn 2's supervisor answers (the test reads the prompt it was given).
const boardScript = `{"steps": [
 {"name": "plan", "match": {"node": "supervisor", "turn": 1, "tool_result": false},
  "reply": {"tool_calls": [{"name": "write_todos", "args": {"todos": [
    {"title": "Gather the figures", "status": "in_progress"},
    {"title": "Draft the report"},
    {"title": "Check the sums", "owner": "auditor"}]}}]}},
 {"name": "reflect", "match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied", "reasoning": "planned"}}},
 {"name": "write 1", "match": {"node": "write", "turn": 1}, "reply": {"text": "Planned."}},
 {"name": "decide 2", "match": {"node": "supervisor", "turn": 2}, "reply": {"json": {"action": "ANSWER", "reasoning": "ok"}}},
 {"name": "write 2", "match": {"node": "write", "turn": 2}, "reply": {"text": "On it."}}
]}`

// TestTaskBoardWrittenEditedAndSeen: the agent's write_todos fills the
// board (tasks.updated, ids minted, defaults), a user's edit (title,
// status, position) is written into the state, and the supervisor's next
// prompt shows the board as the user left it.
func TestTaskBoardWrittenEditedAndSeen(t *testing.T) {
	h := newHarness(t, boardScript, nodes.Options{})
	r := h.run(t, "c1", "plan the quarterly report")
	if r.err != nil {
		t.Fatal(r.err)
	}
	up := last[*events.TasksUpdated](r)
	if up == nil {
		t.Fatalf("no tasks.updated in %s", r.trace())
	}
	if got := mustJSON(t, up); got != `{"tasks":[{"id":"t1","title":"Gather the figures","status":"in_progress","owner":"agent","position":0},`+
		`{"id":"t2","title":"Draft the report","status":"pending","owner":"agent","position":1},`+
		`{"id":"t3","title":"Check the sums","status":"pending","owner":"auditor","position":2}],"revision":1}` {
		t.Errorf("tasks.updated = %s", got)
	}
	board, err := h.agent.Tasks(t.Context(), "c1")
	if err != nil || board.Revision != 1 || len(board.Tasks) != 3 {
		t.Fatalf("Tasks = %+v, %v", board, err)
	}

	title, done, first := "Draft the report (two pages)", events.TaskDone, 0
	task, board, err := h.agent.EditTask(t.Context(), "c1", "t2", nodes.TaskEdit{Title: &title, Status: &done, Position: &first})
	if err != nil {
		t.Fatal(err)
	}
	if want := (events.Task{ID: "t2", Title: title, Status: events.TaskDone, Owner: nodes.OwnerAgent, Position: 0}); task != want {
		t.Errorf("the edited task = %+v, want %+v", task, want)
	}
	if board.Revision != 2 || board.Tasks[0] != task {
		t.Errorf("after the edit: %+v", board)
	}
	for i, tk := range board.Tasks {
		if tk.Position != i {
			t.Errorf("task %s at %d has position %d", tk.ID, i, tk.Position)
		}
	}
	if got, err := h.agent.Tasks(t.Context(), "c1"); err != nil || got.Tasks[1].ID != "t1" || got.Tasks[1].Position != 1 || got.Tasks[2].Position != 2 {
		t.Errorf("Tasks after the edit = %+v, %v", got, err)
	}

	if r := h.run(t, "c1", "go on"); r.err != nil {
		t.Fatal(r.err)
	}
	var prompt string
	for _, c := range h.model.Calls() {
		if c.Node == "supervisor" && c.Turn == 2 {
			prompt = c.System
		}
	}
	want := "- [done] t2: Draft the report (two pages)\n- [in_progress] t1: Gather the figures\n- [pending] t3: Check the sums (owner: auditor)\n"
	if !strings.Contains(prompt, want) {
		t.Errorf("turn 2's supervisor prompt lacks the edited board %q:\n%s", want, prompt)
	}
	if got := h.state(t, "c1").Tasks; got.Revision != 2 {
		t.Errorf("the board after turn 2: %+v", got)
	}
	h.allConsumed(t)
}

func TestEditTaskRefusesBadEdits(t *testing.T) {
	h := newHarness(t, boardScript, nodes.Options{})
	if r := h.run(t, "c1", "plan the quarterly report"); r.err != nil {
		t.Fatal(r.err)
	}
	empty, long, bad, neg := "  ", strings.Repeat("x", nodes.MaxTaskTitle+1), events.TaskStatus("later"), -1
	for name, e := range map[string]nodes.TaskEdit{
		"nothing": {}, "empty title": {Title: &empty}, "long title": {Title: &long}, "bad status": {Status: &bad}, "negative position": {Position: &neg},
	} {
		if _, _, err := h.agent.EditTask(t.Context(), "c1", "t1", e); !errors.Is(err, nodes.ErrInvalidInput) {
			t.Errorf("%s: err = %v, want ErrInvalidInput", name, err)
		}
	}
	done := events.TaskDone
	if _, _, err := h.agent.EditTask(t.Context(), "c1", "t9", nodes.TaskEdit{Status: &done}); !errors.Is(err, nodes.ErrUnknownTask) {
		t.Errorf("unknown task: err = %v", err)
	}
	if _, _, err := h.agent.EditTask(t.Context(), "nobody", "t1", nodes.TaskEdit{Status: &done}); !errors.Is(err, nodes.ErrUnknownTask) {
		t.Errorf("unknown conversation: err = %v", err)
	}
	if b, _ := h.agent.Tasks(t.Context(), "c1"); b.Revision != 1 {
		t.Errorf("a refused edit changed the board: %+v", b)
	}
}

// TestOfflineModelWritesTheBoard: with no key, the offline model plans
// with write_todos through the whole graph, so the board is demonstrable,
// whether the request lists its steps or only names its goal.
func TestOfflineModelWritesTheBoard(t *testing.T) {
	reg, err := llm.NewRegistry(llm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := testTools(t)
	agent, err := nodes.New(reg, tools, nil, nodes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct{ msg, board string }{
		{"Make a plan for the shed: buy wood; build the frame, then paint it.", "t1:buy wood:pending|t2:build the frame:pending|t3:paint it:pending"},
		{"plan a 3-step trip", "t1:Step 1 of 3: trip:pending|t2:Step 2 of 3: trip:pending|t3:Step 3 of 3: trip:pending"},
	} {
		thread := fmt.Sprintf("offline-plan-%d", i)
		r := collect(agent.Run(t.Context(), thread, nodes.Input{Message: tc.msg}))
		if r.err != nil {
			t.Fatal(r.err)
		}
		wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
			+execute_tool tool.start:write_todos tasks.updated tool.complete:write_todos -execute_tool +reflect -reflect
			+synthesize -synthesize +write response.chunk* -write +stream response.done -stream run.completed`)
		board, err := agent.Tasks(t.Context(), thread)
		if err != nil {
			t.Fatal(err)
		}
		var titles []string
		for _, tk := range board.Tasks {
			titles = append(titles, tk.ID+":"+tk.Title+":"+string(tk.Status))
		}
		if got := strings.Join(titles, "|"); got != tc.board {
			t.Errorf("%q: the board: %s", tc.msg, got)
		}
		if done := last[*events.ResponseDone](r); !strings.Contains(done.Content, "task board, 3 tasks") || strings.Contains(done.Content, "arithmetic") {
			t.Errorf("%q: the answer %q does not tell the board", tc.msg, done.Content)
		}
	}
}
