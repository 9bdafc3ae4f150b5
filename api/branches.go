package api

import (
	"cmp"
	"net/http"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/api/paging"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// handleRetry is POST /api/v1/conversations/{id}/runs/{run_id}/retry: the
// failed run taken up again from its last checkpoint, as a new run,
// streamed as SSE. It takes no body.
func (s *Server) handleRetry(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > 0 {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_request", "a retry takes no body: it reruns the turn as it was"))
		return
	}
	rn, sub, err := s.runs.Retry(r.Context(), runs.RetryRequest{UserID: userOf(r), RequestID: middleware.RequestIDFrom(r.Context()),
		ConversationID: r.PathValue("id"), RunID: r.PathValue("run_id"), Interactive: true})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.serveRun(w, r, rn, sub)
}

// handleBranches is GET /api/v1/conversations/{id}/branches?run_id=: the
// versions of that run's turn.
func (s *Server) handleBranches(w http.ResponseWriter, r *http.Request) {
	runID := r.URL.Query().Get("run_id")
	if runID == "" {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_parameter", `"run_id" is required: the run of the turn whose versions to list`))
		return
	}
	bs, err := s.runs.Branches(r.Context(), userOf(r), r.PathValue("id"), runID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if bs == nil {
		bs = []store.Branch{}
	}
	jsonbody.Write(w, http.StatusOK, map[string][]store.Branch{"branches": bs})
}

// branchResponse is GET /api/v1/conversations/{id}/branches/{run_id}: a
// page of the branch's runs, as the conversation's read gives them.
type branchResponse struct {
	ConversationID string                `json:"conversation_id"`
	RunID          string                `json:"run_id"`
	Messages       []store.Message       `json:"messages"`
	Runs           []store.RunWithEvents `json:"runs"`
	NextCursor     string                `json:"next_cursor,omitempty"`
}

// handleBranch is GET /api/v1/conversations/{id}/branches/{run_id}?limit=&cursor=&events_limit=.
func (s *Server) handleBranch(w http.ResponseWriter, r *http.Request) {
	id, runID := r.PathValue("id"), r.PathValue("run_id")
	q := store.RunQuery{Cursor: r.URL.Query().Get("cursor"), Branch: runID}
	if err := cmp.Or(paging.Count(r, "limit", &q.Limit), paging.Count(r, "events_limit", &q.EventLimit)); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.runs.RunRecords(r.Context(), userOf(r), id, q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, branchResponse{ConversationID: id, RunID: runID, Messages: page.Messages, Runs: page.Runs,
		NextCursor: page.NextCursor})
}

// handleActivateBranch is POST
// /api/v1/conversations/{id}/branches/{run_id}/activate: the run's branch
// becomes the conversation's active one. It takes no body.
func (s *Server) handleActivateBranch(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > 0 {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_request", "activating a branch takes no body"))
		return
	}
	id, runID := r.PathValue("id"), r.PathValue("run_id")
	head, err := s.runs.SetBranch(r.Context(), userOf(r), id, runID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, map[string]string{"status": "active", "conversation_id": id, "run_id": runID, "head_run_id": head.ID})
}
