package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/nodes"
)

// meRoutes are the user's view and control of what the agent remembers
// of them (Config.Cognition), and the agent's view of itself.
func (s *Server) meRoutes(r chi.Router) {
	r.Get("/me/profile", s.handleGetProfile)
	r.Patch("/me/profile", s.handlePatchProfile)
	r.Get("/me/memories", s.handleListMemories)
	r.Delete("/me/memories", s.handleForgetAll)
	r.Delete("/me/memories/{id}", s.handleForget)
	r.Get("/cognition/identity", s.handleIdentity)
}

// handleGetProfile is GET /api/v1/me/profile.
func (s *Server) handleGetProfile(w http.ResponseWriter, r *http.Request) {
	p, err := s.cfg.Cognition.Profile(r.Context(), userOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// profilePatch is the body of PATCH /api/v1/me/profile: what the user
// states of themself, winning over inference.
type profilePatch struct {
	// Preferences are set by name; an empty value removes one.
	Preferences map[string]string `json:"preferences"`
	Expertise   string            `json:"expertise"`
	Style       string            `json:"style"`
}

// Bounds of a profile patch.
const (
	maxPreferences   = 50
	maxPreferenceLen = 500
)

// handlePatchProfile is PATCH /api/v1/me/profile.
func (s *Server) handlePatchProfile(w http.ResponseWriter, r *http.Request) {
	var body profilePatch
	if err := decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(body.Preferences) > maxPreferences {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_field", `"preferences" holds more than 50 entries`))
		return
	}
	for k, v := range body.Preferences {
		if k == "" || len(k) > 100 || len(v) > maxPreferenceLen {
			s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_field",
				`each of "preferences" needs a name of at most 100 bytes and a value of at most 500`))
			return
		}
	}
	p, err := s.cfg.Cognition.SetPreferences(r.Context(), userOf(r), body.Preferences, body.Expertise, body.Style)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// handleListMemories is GET /api/v1/me/memories, paged as conversations
// are.
func (s *Server) handleListMemories(w http.ResponseWriter, r *http.Request) {
	page := store.Page{Cursor: r.URL.Query().Get("cursor")}
	if err := queryCount(r, "limit", &page.Limit); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.cfg.Cognition.Memories(r.Context(), userOf(r), page)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// handleForget is DELETE /api/v1/me/memories/{id}: 204, or 404 for an
// unknown memory and another user's.
func (s *Server) handleForget(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Cognition.Forget(r.Context(), userOf(r), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleForgetAll is DELETE /api/v1/me/memories: every memory and the
// profile, and the learning jobs still queued.
func (s *Server) handleForgetAll(w http.ResponseWriter, r *http.Request) {
	n, err := s.cfg.Cognition.ForgetAll(r.Context(), userOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"deleted": n})
}

// handleIdentity is GET /api/v1/cognition/identity: the agent's
// performance per tool and its notes on itself, for the operator. It
// holds counts over every user, nothing of any one.
func (s *Server) handleIdentity(w http.ResponseWriter, r *http.Request) {
	stats, notes, err := s.cfg.Cognition.Identity(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if notes == nil {
		notes = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": stats, "notes": notes})
}

// learnHook is the agent's Hooks.Learn over the cognition service: the
// turn as a learning job, enqueued under a context of its own (the run's
// may end as the answer is sent) and bounded, so the stream node never
// waits long for it.
func learnHook(svc *cognition.Service, log *slog.Logger) func(ctx context.Context, a nodes.Answer) {
	return func(ctx context.Context, a nodes.Answer) {
		t := cognition.Turn{UserID: a.UserID, ConversationID: a.ConversationID, RequestID: a.RequestID, Query: a.Query,
			Answer: a.Message.Content, Outcome: string(a.Outcome)}
		for _, r := range a.ToolResults {
			t.Tools = append(t.Tools, cognition.ToolOutcome{Tool: r.Tool, Status: string(r.Status)})
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := svc.EnqueueLearning(ctx, t); err != nil {
			log.LogAttrs(ctx, slog.LevelWarn, "cognition: learning not enqueued", slog.String("conversation_id", a.ConversationID),
				slog.Any("error", err))
		}
	}
}
