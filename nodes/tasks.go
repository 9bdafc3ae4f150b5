package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
)

// This file holds the task board: the plan the agent keeps with
// write_todos, in the conversation's state, which a user may edit between
// runs (Agent.EditTask) and the supervisor reads on its next decision.

// WriteTodosTool is the name of the tool with which the agent writes its
// task board. The agent runs it itself (it writes the graph's state), so
// no tool source offers it and it never asks for approval.
const WriteTodosTool = "write_todos"

// OwnerAgent is the owner of a task the agent itself does; any other
// owner is the name of a sub-agent.
const OwnerAgent = "agent"

// Board limits: what a model or a user may write.
const (
	MaxTasks        = 50
	MaxTaskTitle    = 200
	maxTaskIDLen    = 64
	maxTaskOwnerLen = 64
)

// writeTodosResult is write_todos' result as the model reads it.
const writeTodosResult = "The task board now has %d task(s): %d pending, %d in progress, %d done."

// positioned returns tasks with each Position set to its index, in place.
func positioned(tasks []events.Task) []events.Task {
	for i := range tasks {
		tasks[i].Position = i
	}
	return tasks
}

// TaskBoard is the conversation's plan, in order. Revision counts its
// changes: each write (the agent's or a user's) is the board it read
// plus one, and the state's reducer keeps the newest revision, so a
// write computed from an older board never replaces a newer one.
type TaskBoard struct {
	Tasks    []events.Task `json:"tasks"`
	Revision int           `json:"revision"`
}

// newestBoard is TaskBoard's reducer.
func newestBoard(current, update TaskBoard) TaskBoard {
	if update.Revision < current.Revision {
		return current
	}
	return update
}

// writeTodosDef is the tool the supervisor is offered beside the
// catalog's.
var writeTodosDef = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
	Name: WriteTodosTool,
	Description: "Write your task board: the plan for a task of several steps, shown to the user, who may edit it. " +
		"Send the whole list each time, in order; keep the ids of tasks you keep. Mark a task in_progress when you start it " +
		"and done when it is finished.",
	Parameters: map[string]any{
		"type":     "object",
		"required": []string{"todos"},
		"properties": map[string]any{
			"todos": map[string]any{"type": "array", "maxItems": MaxTasks, "items": map[string]any{
				"type": "object", "required": []string{"title"},
				"properties": map[string]any{
					"id":     map[string]any{"type": "string", "description": "Keep the id of an existing task; omit for a new one."},
					"title":  map[string]any{"type": "string"},
					"status": map[string]any{"type": "string", "enum": []string{string(events.TaskPending), string(events.TaskInProgress), string(events.TaskDone)}},
					"owner":  map[string]any{"type": "string", "description": `"agent" (the default) or the sub-agent doing it.`},
				},
			}},
		},
	},
}}

// writeTodosArgs are write_todos' arguments: the tasks in order (a
// task's position is its place in the list, not an argument).
type writeTodosArgs struct {
	Todos []todoArg `json:"todos"`
}

// todoArg is one task as the model writes it.
type todoArg struct {
	ID     string            `json:"id"`
	Title  string            `json:"title"`
	Status events.TaskStatus `json:"status"`
	Owner  string            `json:"owner"`
}

// planBoard turns write_todos' arguments into the board that follows
// board: every task checked, new ones given ids, statuses defaulted to
// pending, owners to the agent. An error is for the model to read.
func planBoard(board TaskBoard, raw json.RawMessage) (TaskBoard, error) {
	var args writeTodosArgs
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return TaskBoard{}, fmt.Errorf("write_todos takes {\"todos\": [{\"id\"?, \"title\", \"status\"?, \"owner\"?}]}: %w", err)
	}
	if len(args.Todos) > MaxTasks {
		return TaskBoard{}, fmt.Errorf("write_todos: %d tasks, at most %d", len(args.Todos), MaxTasks)
	}
	next := nextTaskNumber(board.Tasks)
	seen := make(map[string]bool, len(args.Todos))
	out := make([]events.Task, 0, len(args.Todos))
	for i, a := range args.Todos {
		t := events.Task{ID: a.ID, Title: a.Title, Status: a.Status, Owner: a.Owner, Position: i}
		t.Title = strings.TrimSpace(t.Title)
		t.ID = strings.TrimSpace(t.ID)
		t.Owner = strings.TrimSpace(t.Owner)
		if err := checkTitle(t.Title); err != nil {
			return TaskBoard{}, fmt.Errorf("write_todos: todos[%d]: %w", i, err)
		}
		if t.ID == "" {
			t.ID = "t" + strconv.Itoa(next)
			next++
		}
		if len(t.ID) > maxTaskIDLen || seen[t.ID] {
			return TaskBoard{}, fmt.Errorf("write_todos: todos[%d]: id %q is too long or used twice", i, t.ID)
		}
		seen[t.ID] = true
		if t.Status == "" {
			t.Status = events.TaskPending
		}
		if !t.Status.Valid() {
			return TaskBoard{}, fmt.Errorf("write_todos: todos[%d]: status %q is not pending, in_progress or done", i, t.Status)
		}
		if t.Owner == "" {
			t.Owner = OwnerAgent
		}
		if utf8.RuneCountInString(t.Owner) > maxTaskOwnerLen {
			return TaskBoard{}, fmt.Errorf("write_todos: todos[%d]: owner is longer than %d characters", i, maxTaskOwnerLen)
		}
		out = append(out, t)
	}
	return TaskBoard{Tasks: out, Revision: board.Revision + 1}, nil
}

// nextTaskNumber is one more than the largest n of the ids "t<n>" in
// tasks, so a new task never takes the id of one the board had.
func nextTaskNumber(tasks []events.Task) int {
	n := 0
	for _, t := range tasks {
		if v, err := strconv.Atoi(strings.TrimPrefix(t.ID, "t")); err == nil && strings.HasPrefix(t.ID, "t") && v > n {
			n = v
		}
	}
	return n + 1
}

func checkTitle(title string) error {
	switch {
	case title == "":
		return errors.New("a task needs a title")
	case utf8.RuneCountInString(title) > MaxTaskTitle:
		return fmt.Errorf("a task's title has at most %d characters", MaxTaskTitle)
	}
	return nil
}

// boardSummary is write_todos' result as the model reads it.
func boardSummary(b TaskBoard) string {
	var pending, doing, done int
	for _, t := range b.Tasks {
		switch t.Status {
		case events.TaskPending:
			pending++
		case events.TaskInProgress:
			doing++
		case events.TaskDone:
			done++
		}
	}
	return fmt.Sprintf(writeTodosResult, len(b.Tasks), pending, doing, done)
}

// boardHeading introduces the board in the supervisor's prompt.
const boardHeading = "\n## events.Task board\n"

// writeBoard writes the board into the supervisor's prompt, one task a
// line, as the user may have left it: the agent plans from it.
func writeBoard(b *strings.Builder, board TaskBoard) {
	b.WriteString(boardHeading)
	if len(board.Tasks) == 0 {
		b.WriteString("Empty. For a task of several steps, write a plan with `" + WriteTodosTool + "` first.\n")
		return
	}
	b.WriteString("Your plan so far (the user may have edited it; follow it, and keep it current with `" + WriteTodosTool + "`):\n")
	for _, t := range board.Tasks {
		b.WriteString("- [")
		b.WriteString(string(t.Status))
		b.WriteString("] ")
		b.WriteString(t.ID)
		b.WriteString(": ")
		b.WriteString(t.Title)
		if t.Owner != "" && t.Owner != OwnerAgent {
			b.WriteString(" (owner: " + t.Owner + ")")
		}
		b.WriteByte('\n')
	}
}

// boardLen bounds what writeBoard writes, for the prompt's buffer.
func boardLen(board TaskBoard) int {
	n := len(boardHeading) + 160
	for _, t := range board.Tasks {
		n += len(t.ID) + len(t.Title) + len(t.Owner) + 32
	}
	return n
}

// TaskEdit is a user's change to one task; nil fields stay as they are.
type TaskEdit struct {
	Title  *string
	Status *events.TaskStatus
	// Position moves the task to this index of the board (0 is first;
	// past the end is last).
	Position *int
}

// ErrUnknownTask: the board has no task with that id.
var ErrUnknownTask = errors.New("nodes: unknown task")

// Tasks returns the conversation's task board; an empty one (revision 0)
// for a conversation with no state.
func (a *Agent) Tasks(ctx context.Context, conversationID string) (TaskBoard, error) {
	snap, err := a.graph.GetState(ctx, graph.Ref{ThreadID: conversationID})
	if errors.Is(err, graph.ErrCheckpointNotFound) {
		return TaskBoard{Tasks: []events.Task{}}, nil
	}
	if err != nil {
		return TaskBoard{}, fmt.Errorf("nodes: tasks of %s: %w", conversationID, err)
	}
	b := snap.Values.Tasks
	b.Tasks = positioned(slices.Clone(nonNil(b.Tasks)))
	return b, nil
}

// EditTask applies a user's edit to one task of the board and writes the
// new board into the conversation's state, where the supervisor reads it
// on its next decision. It returns the edited task (with its position
// after the change) and the whole new board. It must not run alongside a run of the
// conversation (the service refuses with 409 while one goes or waits);
// the planned next step of the thread is kept. Errors: ErrInvalidInput
// (an empty edit, a bad title or status, a negative position),
// ErrUnknownTask (also for a conversation with no state).
func (a *Agent) EditTask(ctx context.Context, conversationID, taskID string, e TaskEdit) (events.Task, TaskBoard, error) {
	if e.Title == nil && e.Status == nil && e.Position == nil {
		return events.Task{}, TaskBoard{}, fmt.Errorf("nodes: edit task: %w: nothing to change", ErrInvalidInput)
	}
	if e.Title != nil {
		t := strings.TrimSpace(*e.Title)
		if err := checkTitle(t); err != nil {
			return events.Task{}, TaskBoard{}, fmt.Errorf("nodes: edit task: %w: %w", ErrInvalidInput, err)
		}
		e.Title = &t
	}
	if e.Status != nil && !e.Status.Valid() {
		return events.Task{}, TaskBoard{}, fmt.Errorf("nodes: edit task: %w: status %q is not pending, in_progress or done", ErrInvalidInput, *e.Status)
	}
	if e.Position != nil && *e.Position < 0 {
		return events.Task{}, TaskBoard{}, fmt.Errorf("nodes: edit task: %w: position must be 0 or more", ErrInvalidInput)
	}
	board, err := a.Tasks(ctx, conversationID)
	if err != nil {
		return events.Task{}, TaskBoard{}, err
	}
	i := slices.IndexFunc(board.Tasks, func(t events.Task) bool { return t.ID == taskID })
	if i < 0 {
		return events.Task{}, TaskBoard{}, fmt.Errorf("nodes: edit task %q of %s: %w", taskID, conversationID, ErrUnknownTask)
	}
	tasks := slices.Clone(board.Tasks)
	t := tasks[i]
	if e.Title != nil {
		t.Title = *e.Title
	}
	if e.Status != nil {
		t.Status = *e.Status
	}
	tasks[i] = t
	if e.Position != nil {
		tasks = slices.Delete(tasks, i, i+1)
		tasks = slices.Insert(tasks, min(*e.Position, len(tasks)), t)
	}
	next := TaskBoard{Tasks: positioned(tasks), Revision: board.Revision + 1}
	if _, err := a.graph.UpdateState(ctx, graph.Ref{ThreadID: conversationID}, "", graph.Command[ChatState]{Update: ChatState{Tasks: next}}); err != nil {
		return events.Task{}, TaskBoard{}, fmt.Errorf("nodes: edit task %q of %s: %w", taskID, conversationID, err)
	}
	return next.Tasks[slices.IndexFunc(next.Tasks, func(t events.Task) bool { return t.ID == taskID })], next, nil
}

// writeTodos runs write_todos as step i of the execution: the agent's own
// tool, which plans the board that newBoard puts in the state, between
// tool.start and tool.complete (or tool.error, for arguments the model
// must fix).
func (x *execution) writeTodos(ctx context.Context, i int, args json.RawMessage) {
	st := x.steps[i]
	r := ToolResult{ToolCallID: st.ToolCallID, Tool: st.Tool, Args: args, Iteration: x.iteration}
	board, err := planBoard(x.board, args)
	if err != nil {
		r.Status, r.Content = ToolError, err.Error()
		_ = emit(ctx, &events.ToolError{ToolCallID: st.ToolCallID, Tool: st.Tool, Error: r.Content})
		x.results[i] = r
		return
	}
	r.Status, r.Content = ToolSuccess, boardSummary(board)
	_ = emit(ctx, &events.TasksUpdated{Tasks: board.Tasks, Revision: board.Revision})
	_ = emit(ctx, &events.ToolComplete{ToolCallID: st.ToolCallID, Tool: st.Tool, Result: r.Content})
	x.results[i] = r
}

// newBoard is the board the execution's last successful write_todos call
// wrote, planned again from its arguments (planning is deterministic, so
// a call that finished before a question parked the execution counts
// too); the zero board, which changes nothing, when none did.
func (x *execution) newBoard() TaskBoard {
	for i := len(x.steps) - 1; i >= 0; i-- {
		if r := x.results[i]; x.steps[i].Tool == WriteTodosTool && r.Status == ToolSuccess {
			if b, err := planBoard(x.board, r.Args); err == nil {
				return b
			}
		}
	}
	return TaskBoard{}
}
