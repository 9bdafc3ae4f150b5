package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

// taskBoard is GET …/tasks' answer: the whole board, in order, each task
// {"id", "title", "status", "owner", "position"} (position is the task's
// 0-based index on the board), with the board's revision (a count of its
// changes, which the page uses to drop an older board than the one shown).
type taskBoard struct {
	Tasks    []events.Task `json:"tasks"`
	Revision int           `json:"revision"`
}

func boardOf(b nodes.TaskBoard) taskBoard {
	if b.Tasks == nil {
		b.Tasks = []events.Task{}
	}
	return taskBoard{Tasks: b.Tasks, Revision: b.Revision}
}

// handleTasks is GET /api/v1/conversations/{id}/tasks: the
// conversation's task board.
func (s *Server) handleTasks(w http.ResponseWriter, r *http.Request) {
	b, err := s.runs.Tasks(r.Context(), userOf(r), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, boardOf(b))
}

// handleEditTask is PATCH /api/v1/conversations/{id}/tasks/{task_id}
// with {"title"?, "status"?, "position"?}: a user's edit of one task,
// answered with that task after it ({"id", "title", "status", "owner",
// "position"}; position is where the task now is). 409 run_active while a run of
// the conversation goes or waits; 404 for another user's conversation or
// an unknown task.
func (s *Server) handleEditTask(w http.ResponseWriter, r *http.Request) {
	e, err := decodeTaskPatch(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.runs.EditTask(r.Context(), userOf(r), r.PathValue("id"), r.PathValue("task_id"), e)
	if errors.Is(err, nodes.ErrUnknownTask) {
		err = errorf(http.StatusNotFound, "not_found", "the conversation's task board has no task with this id")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, t)
}

// taskPatch is the PATCH body as it comes: each field present or not,
// so that a null is refused rather than taken for "unchanged".
type taskPatch struct {
	Title    json.RawMessage `json:"title"`
	Status   json.RawMessage `json:"status"`
	Position json.RawMessage `json:"position"`
}

var errEmptyPatch = errorf(http.StatusBadRequest, "invalid_request", `send at least one of "title", "status" and "position"`)

// decodeTaskPatch reads a PATCH body strictly (decode's rules) into an
// edit: title a string of 1 to nodes.MaxTaskTitle characters once
// trimmed, status one of pending, in_progress and done, position a whole
// number from 0; no nulls, at least one field.
func decodeTaskPatch(r *http.Request) (nodes.TaskEdit, error) {
	var p taskPatch
	if err := jsonbody.Decode(r, &p); err != nil {
		return nodes.TaskEdit{}, err
	}
	var e nodes.TaskEdit
	invalid := func(msg string) (nodes.TaskEdit, error) {
		return nodes.TaskEdit{}, errorf(http.StatusBadRequest, "invalid_request", msg)
	}
	null := []byte("null")
	if p.Title != nil {
		var t string
		if bytes.Equal(p.Title, null) || json.Unmarshal(p.Title, &t) != nil {
			return invalid(`"title" must be a string`)
		}
		e.Title = &t
	}
	if p.Status != nil {
		var st events.TaskStatus
		if bytes.Equal(p.Status, null) || json.Unmarshal(p.Status, &st) != nil || !st.Valid() {
			return invalid(`"status" must be "pending", "in_progress" or "done"`)
		}
		e.Status = &st
	}
	if p.Position != nil {
		var pos int
		if bytes.Equal(p.Position, null) || json.Unmarshal(p.Position, &pos) != nil || pos < 0 || pos > nodes.MaxTasks {
			return invalid(`"position" must be a whole number from 0 to the board's length`)
		}
		e.Position = &pos
	}
	if e.Title == nil && e.Status == nil && e.Position == nil {
		return nodes.TaskEdit{}, errEmptyPatch
	}
	return e, nil
}

// agentGraph is GET /api/v1/agent/graph: the compiled agent graph as
// the engine draws it (a Mermaid flowchart), for the page's live view.
type agentGraph struct {
	Mermaid string `json:"mermaid"`
}

func (s *Server) handleAgentGraph(w http.ResponseWriter, r *http.Request) {
	jsonbody.Write(w, http.StatusOK, agentGraph{Mermaid: s.runs.Mermaid()})
}
