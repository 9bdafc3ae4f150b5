package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/api/store"
)

// handleListConversations is GET /api/v1/conversations?limit=&cursor=.
func (s *Server) handleListConversations(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page := store.Page{Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_parameter", `"limit" must be a whole number, 0 or more`))
			return
		}
		page.Limit = n
	}
	p, err := s.store.ListConversations(r.Context(), userOf(r), page)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if p.Conversations == nil {
		p.Conversations = []store.Conversation{}
	}
	writeJSON(w, http.StatusOK, p)
}

// conversationResponse is GET /api/v1/conversations/{id}.
type conversationResponse struct {
	ID        string                `json:"id"`
	Title     string                `json:"title"`
	CreatedAt time.Time             `json:"created_at"`
	UpdatedAt time.Time             `json:"updated_at"`
	Status    store.RunStatus       `json:"status"`
	Messages  []store.Message       `json:"messages"`
	Runs      []store.RunWithEvents `json:"runs"`
}

func (s *Server) handleGetConversation(w http.ResponseWriter, r *http.Request) {
	user, id := userOf(r), r.PathValue("id")
	c, err := s.store.GetConversation(r.Context(), user, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	msgs, err := s.store.ListMessages(r.Context(), user, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	runs, err := s.store.ListRuns(r.Context(), user, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res := conversationResponse{ID: c.ID, Title: c.Title, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Status: c.Status,
		Messages: msgs, Runs: runs}
	if res.Messages == nil {
		res.Messages = []store.Message{}
	}
	if res.Runs == nil {
		res.Runs = []store.RunWithEvents{}
	}
	writeJSON(w, http.StatusOK, res)
}

// handleDeleteConversation is DELETE /api/v1/conversations/{id}: a live
// run is cancelled first; then the record and the agent's state go.
func (s *Server) handleDeleteConversation(w http.ResponseWriter, r *http.Request) {
	user, id := userOf(r), r.PathValue("id")
	if _, err := s.store.GetConversation(r.Context(), user, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.runs.stop(r.Context(), id, errDeleted); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.store.DeleteConversation(r.Context(), user, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.agent.Delete(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleStream is GET /api/v1/conversations/{id}/stream: the events of
// the conversation's latest run (or of ?run_id=, an addition) after
// Last-Event-ID (or ?after=), then live. It answers 204, which tells an
// EventSource to stop reconnecting, when the run has ended and the
// client has seen its every event.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	user, id := userOf(r), r.PathValue("id")
	after := int64(0)
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" || r.URL.Query().Get("after") != "" {
		if v == "" {
			v = r.URL.Query().Get("after")
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_parameter", "Last-Event-ID (or after) must be an event id the stream sent, a whole number"))
			return
		}
		after = n
	}
	var (
		run store.Run
		err error
	)
	if runID := r.URL.Query().Get("run_id"); runID != "" {
		run, err = s.store.GetRun(r.Context(), user, runID)
		if err == nil && run.ConversationID != id {
			err = store.ErrNotFound
		}
	} else {
		run, err = s.store.LatestRun(r.Context(), user, id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if run.Status.Final() && after >= run.LastSeq {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sub := s.runs.subscribe(run.ID, true)
	defer s.runs.unsubscribe(sub)
	s.serveSSE(w, r, id, run.ID, sub, after, true)
}

// handleCancel is POST /api/v1/conversations/{id}/cancel.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	user, id := userOf(r), r.PathValue("id")
	if _, err := s.store.GetConversation(r.Context(), user, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	runID, err := s.runs.cancel(r.Context(), user, id, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "cancelling", "run_id": runID})
}
