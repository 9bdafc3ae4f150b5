package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/paging"
	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/store"
)

// meRoutes are the user's view and control of what the agent remembers
// of them (Config.Cognition), and the agent's view of itself.
func (s *Server) meRoutes(r chi.Router) {
	r.Get("/me/profile", s.handleGetProfile)
	r.Patch("/me/profile", s.handlePatchProfile)
	r.Get("/me/memories", s.handleListMemories)
	r.Delete("/me/memories", s.handleForgetAll)
	r.Delete("/me/memories/{id}", s.handleForget)
	r.With(s.operators()).Get("/cognition/identity", s.handleIdentity)
}

// handleGetProfile is GET /api/v1/me/profile.
func (s *Server) handleGetProfile(w http.ResponseWriter, r *http.Request) {
	p, err := s.cfg.Cognition.Profile(r.Context(), userOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, p)
}

// profilePatch is the body of PATCH /api/v1/me/profile: any of the
// fields GET shows, what the user states of themself winning over
// inference. user_id and updated_at are the server's: user_id may only
// repeat the caller's own, and updated_at is ignored, so a GET body can
// be sent back edited.
type profilePatch struct {
	UserID             *string           `json:"user_id"`
	ExpertiseLevel     string            `json:"expertise_level"`
	CommunicationStyle string            `json:"communication_style"`
	Interests          []string          `json:"interests"`
	Preferences        map[string]string `json:"preferences"`
	UpdatedAt          *time.Time        `json:"updated_at"`
}

// Bounds of a profile patch; the agent keeps at most maxInterests
// interests of its own too.
const (
	maxPreferences   = 50
	maxPreferenceLen = 500
	maxInterests     = 10
	maxNameLen       = 100
)

// handlePatchProfile is PATCH /api/v1/me/profile.
func (s *Server) handlePatchProfile(w http.ResponseWriter, r *http.Request) {
	var body profilePatch
	if err := jsonbody.Decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	invalid := func(msg string) {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_field", msg))
	}
	if body.UserID != nil && *body.UserID != userOf(r) {
		invalid(`"user_id" is the caller's own and cannot be changed`)
		return
	}
	if len(body.Preferences) > maxPreferences {
		invalid(`"preferences" holds more than 50 entries`)
		return
	}
	for k, v := range body.Preferences {
		if k == "" || len(k) > maxNameLen || len(v) > maxPreferenceLen {
			invalid(`each of "preferences" needs a name of at most 100 bytes and a value of at most 500`)
			return
		}
	}
	if len(body.Interests) > maxInterests {
		invalid(`"interests" holds more than 10 entries`)
		return
	}
	for _, t := range body.Interests {
		if t == "" || len(t) > maxNameLen {
			invalid(`each of "interests" needs 1 to 100 bytes`)
			return
		}
	}
	p, err := s.cfg.Cognition.SetPreferences(r.Context(), userOf(r), cognition.ProfileEdit{Preferences: body.Preferences,
		Expertise: body.ExpertiseLevel, Style: body.CommunicationStyle, Interests: body.Interests})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, p)
}

// handleListMemories is GET /api/v1/me/memories, paged as conversations
// are.
func (s *Server) handleListMemories(w http.ResponseWriter, r *http.Request) {
	page := store.Page{Cursor: r.URL.Query().Get("cursor")}
	if err := paging.Count(r, "limit", &page.Limit); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.cfg.Cognition.Memories(r.Context(), userOf(r), page)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if p.Memories == nil {
		p.Memories = []store.Memory{}
	}
	jsonbody.Write(w, http.StatusOK, p)
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
// profile, and the learning jobs still queued; 204.
func (s *Server) handleForgetAll(w http.ResponseWriter, r *http.Request) {
	if _, err := s.cfg.Cognition.ForgetAll(r.Context(), userOf(r)); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleIdentity is GET /api/v1/cognition/identity: the agent's
// performance per tool and its notes on itself, for the operators
// (Config.Admins). It holds counts over every user, nothing of any one.
func (s *Server) handleIdentity(w http.ResponseWriter, r *http.Request) {
	stats, notes, err := s.cfg.Cognition.Identity(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if notes == nil {
		notes = []string{}
	}
	jsonbody.Write(w, http.StatusOK, map[string]any{"tools": stats, "notes": notes})
}
