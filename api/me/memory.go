package me

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/paging"
	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// memoryRoutes are the user's view and control of what the agent remembers
// of them (Config.Cognition), and the agent's view of itself.
func (h *handler) memoryRoutes(r chi.Router) {
	r.Get("/me/profile", h.handleGetProfile)
	r.Patch("/me/profile", h.handlePatchProfile)
	r.Get("/me/memories", h.handleListMemories)
	r.Delete("/me/memories", h.handleForgetAll)
	r.Delete("/me/memories/{id}", h.handleForget)
	r.With(h.cfg.Operators).Get("/cognition/identity", h.handleIdentity)
}

// handleGetProfile is GET /api/v1/me/profile.
func (h *handler) handleGetProfile(w http.ResponseWriter, r *http.Request) {
	p, err := h.cfg.Cognition.Profile(r.Context(), runs.UserFrom(r.Context()))
	if err != nil {
		h.cfg.Error(w, r, err)
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
func (h *handler) handlePatchProfile(w http.ResponseWriter, r *http.Request) {
	var body profilePatch
	if err := jsonbody.Decode(r, &body); err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	invalid := func(msg string) {
		h.cfg.Error(w, r, httperr.New(http.StatusBadRequest, "invalid_field", msg))
	}
	if body.UserID != nil && *body.UserID != runs.UserFrom(r.Context()) {
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
	p, err := h.cfg.Cognition.SetPreferences(r.Context(), runs.UserFrom(r.Context()), cognition.ProfileEdit{Preferences: body.Preferences,
		Expertise: body.ExpertiseLevel, Style: body.CommunicationStyle, Interests: body.Interests})
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, p)
}

// handleListMemories is GET /api/v1/me/memories, paged as conversations
// are.
func (h *handler) handleListMemories(w http.ResponseWriter, r *http.Request) {
	page := store.Page{Cursor: r.URL.Query().Get("cursor")}
	if err := paging.Count(r, "limit", &page.Limit); err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	p, err := h.cfg.Cognition.Memories(r.Context(), runs.UserFrom(r.Context()), page)
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	if p.Memories == nil {
		p.Memories = []store.Memory{}
	}
	jsonbody.Write(w, http.StatusOK, p)
}

// handleForget is DELETE /api/v1/me/memories/{id}: 204, or 404 for an
// unknown memory and another user's.
func (h *handler) handleForget(w http.ResponseWriter, r *http.Request) {
	if err := h.cfg.Cognition.Forget(r.Context(), runs.UserFrom(r.Context()), r.PathValue("id")); err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleForgetAll is DELETE /api/v1/me/memories: every memory and the
// profile, and the learning jobs still queued; 204.
func (h *handler) handleForgetAll(w http.ResponseWriter, r *http.Request) {
	if _, err := h.cfg.Cognition.ForgetAll(r.Context(), runs.UserFrom(r.Context())); err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleIdentity is GET /api/v1/cognition/identity: the agent's
// performance per tool and its notes on itself, for the operators
// (Config.Operators). It holds counts over every user, nothing of any one.
func (h *handler) handleIdentity(w http.ResponseWriter, r *http.Request) {
	stats, notes, err := h.cfg.Cognition.Identity(r.Context())
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	if notes == nil {
		notes = []string{}
	}
	jsonbody.Write(w, http.StatusOK, map[string]any{"tools": stats, "notes": notes})
}
