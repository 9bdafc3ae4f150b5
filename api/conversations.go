package api

import (
	"cmp"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/paging"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// handleListConversations is GET /api/v1/conversations?limit=&cursor=.
func (s *Server) handleListConversations(w http.ResponseWriter, r *http.Request) {
	page, err := paging.Page(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.store.ListConversations(r.Context(), userOf(r), page)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if p.Conversations == nil {
		p.Conversations = []store.Conversation{}
	}
	jsonbody.Write(w, http.StatusOK, p)
}

// conversationResponse is GET /api/v1/conversations/{id}: a page of its
// runs, each with its first events, and their messages. NextCursor is an
// addition.
type conversationResponse struct {
	ID         string                `json:"id"`
	Title      string                `json:"title"`
	CreatedAt  time.Time             `json:"created_at"`
	UpdatedAt  time.Time             `json:"updated_at"`
	Status     store.RunStatus       `json:"status"`
	Messages   []store.Message       `json:"messages"`
	Runs       []store.RunWithEvents `json:"runs"`
	NextCursor string                `json:"next_cursor,omitempty"`
}

// handleGetConversation is GET /api/v1/conversations/{id}?limit=&cursor=&events_limit=.
func (s *Server) handleGetConversation(w http.ResponseWriter, r *http.Request) {
	user, id := userOf(r), r.PathValue("id")
	q := store.RunQuery{Cursor: r.URL.Query().Get("cursor")}
	if err := cmp.Or(paging.Count(r, "limit", &q.Limit), paging.Count(r, "events_limit", &q.EventLimit)); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.store.GetConversation(r.Context(), user, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.ListRuns(r.Context(), user, id, q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, conversationResponse{ID: c.ID, Title: c.Title, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		Status: c.Status, Messages: page.Messages, Runs: page.Runs, NextCursor: page.NextCursor})
}

// eventsResponse is GET /api/v1/conversations/{id}/runs/{run_id}/events.
type eventsResponse struct {
	Events []store.Event `json:"events"`
	// NextAfter is the after of the next page; absent when the run had no
	// more events stored.
	NextAfter int64 `json:"next_after,omitempty"`
}

// handleRunEvents is GET
// /api/v1/conversations/{id}/runs/{run_id}/events?after=&limit=: a page
// of the run's stored events (an addition), for a history whose runs
// came with their first events only.
func (s *Server) handleRunEvents(w http.ResponseWriter, r *http.Request) {
	user, id := userOf(r), r.PathValue("id")
	var (
		after int64
		limit int
	)
	if err := cmp.Or(paging.Count(r, "after", &after), paging.Count(r, "limit", &limit)); err != nil {
		s.writeError(w, r, err)
		return
	}
	run, err := s.store.GetRun(r.Context(), user, r.PathValue("run_id"))
	if err == nil && run.ConversationID != id {
		err = store.ErrNotFound
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	evs, err := s.store.EventsAfter(r.Context(), user, run.ID, after, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res := eventsResponse{Events: evs}
	// More follow a page that ends before the run's last event as it was
	// read (a page stops short at store.PageBytes), or a full one that
	// ends after it, the run having gone on since.
	if n := len(evs); n > 0 {
		size, _ := store.EventLimit(limit)
		if last := evs[n-1].Seq; last < run.LastSeq || (n == size && last != run.LastSeq) {
			res.NextAfter = last
		}
	}
	jsonbody.Write(w, http.StatusOK, res)
}

// handleDeleteConversation is DELETE /api/v1/conversations/{id}: a live
// run is cancelled first; then its documents' files, the agent's state
// and the record go (runs.Service.DeleteConversation).
func (s *Server) handleDeleteConversation(w http.ResponseWriter, r *http.Request) {
	if err := s.runs.DeleteConversation(r.Context(), userOf(r), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleStream is GET /api/v1/conversations/{id}/stream: the events of
// the conversation's latest run (or of ?run_id=, an addition) after
// Last-Event-ID (or ?after=), or, given neither, from its segment under
// way or its last (runs.Service.SegmentStart), then live. It answers
// 204, which tells an EventSource to stop reconnecting, when the run has
// ended and the client has seen its every event.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	user, id := userOf(r), r.PathValue("id")
	after, given := int64(0), false
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" || r.URL.Query().Get("after") != "" {
		given = true
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
	if err == nil && !given {
		// A client with no event of the run watches its segment under
		// way, or its last, to that segment's one terminal event.
		after, err = s.runs.SegmentStart(r.Context(), user, run)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if run.Status.Final() && after >= run.LastSeq {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sub := s.runs.Subscribe(run.ID, true)
	defer sub.Close()
	s.serveSSE(w, r, runs.FollowRequest{User: user, ConversationID: id, RunID: run.ID, Sub: sub, After: after, Replay: true})
}

// handleCancel is POST /api/v1/conversations/{id}/cancel.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	runID, err := s.runs.Cancel(r.Context(), userOf(r), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusAccepted, map[string]string{"status": "cancelling", "run_id": runID})
}

// handleQueue is GET /api/v1/conversations/{id}/queue: the messages
// waiting for the conversation's run to end (multitask_strategy
// enqueue), first first.
func (s *Server) handleQueue(w http.ResponseWriter, r *http.Request) {
	q, err := s.runs.QueuedRuns(r.Context(), userOf(r), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, map[string][]runs.QueuedRun{"queued": q})
}

// handleCancelQueued is DELETE /api/v1/conversations/{id}/queue/{run_id}:
// the queued message will not run. 404 once it has started.
func (s *Server) handleCancelQueued(w http.ResponseWriter, r *http.Request) {
	user, id := userOf(r), r.PathValue("run_id")
	q, err := s.runs.Queued(r.Context(), user, id)
	if err == nil && q.ConversationID != r.PathValue("id") {
		err = runs.ErrNotFound
	}
	if err == nil {
		err = s.runs.CancelQueued(r.Context(), user, id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// renameRequest is the body of PATCH /api/v1/conversations/{id}.
type renameRequest struct {
	Title *string `json:"title"`
}

// handleRenameConversation is PATCH /api/v1/conversations/{id} with
// {"title"}: the user names the conversation, answered with it as the
// list shows it. The title is trimmed; an empty one, one longer than
// store.MaxTitleRunes characters or with a control character is 400.
func (s *Server) handleRenameConversation(w http.ResponseWriter, r *http.Request) {
	var body renameRequest
	if err := jsonbody.Decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Title == nil {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_field", `"title" is required`))
		return
	}
	if err := store.CheckTitle(strings.TrimSpace(*body.Title)); err != nil {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_field",
			`"title" must be text of 1 to `+strconv.Itoa(store.MaxTitleRunes)+" characters on one line: "+
				strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": ")))
		return
	}
	c, err := s.runs.RenameConversation(r.Context(), userOf(r), r.PathValue("id"), *body.Title)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, c)
}
