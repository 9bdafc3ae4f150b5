package me

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/runs"
)

// Eraser erases users: DELETE /api/v1/me asks it to, and GET
// /api/v1/me/erasure reads how far it got. cmd/trellis implements it
// with a durable job.
type Eraser interface {
	// Erase starts erasing the user, or finds the erasure that is under
	// way already, and returns it.
	Erase(ctx context.Context, userID string) (Erasure, error)
	// Erasure returns the user's latest erasure, or an error matching
	// ErrNoErasure when none is known.
	Erasure(ctx context.Context, userID string) (Erasure, error)
}

// ErrNoErasure: the user asked for no erasure, or it finished long
// enough ago to be forgotten too. HTTP 404.
var ErrNoErasure = errors.New("me: no erasure of this user is known")

// Erasure is an erasure of a user, as DELETE /api/v1/me and GET
// /api/v1/me/erasure show it.
type Erasure struct {
	// Status is queued, running, retrying (an attempt failed; another
	// follows), completed or failed (every attempt failed: ask again).
	Status string `json:"status"`
	// Attempt counts the attempts begun so far.
	Attempt     int       `json:"attempt"`
	RequestedAt time.Time `json:"requested_at"`
	// CompletedAt is when it completed; nil before.
	CompletedAt *time.Time `json:"completed_at"`
	// Error is why the last attempt failed; "" when none did.
	Error string `json:"error"`
	// Progress is how far the latest attempt got; nil before the first
	// attempt begins.
	Progress *ErasureProgress `json:"progress"`
}

// ErasureProgress is how far an attempt at an erasure got: the step it
// is in, of ErasureSteps in order, and what it deleted so far. Each
// attempt starts again from the first step (what an earlier one deleted
// is gone, so it finds less), and the counts are the attempt's.
type ErasureProgress struct {
	// Step is the step under way, or "done" once the last one is.
	Step string `json:"step"`
	// StepsDone counts the steps finished, of len(ErasureSteps).
	StepsDone int `json:"steps_done"`
	Steps     int `json:"steps"`
	// ConversationsDeleted counts the conversations deleted (steps
	// conversations and late_conversations).
	ConversationsDeleted int `json:"conversations_deleted"`
}

// ErasureSteps are the steps of an erasure, in order (docs/api.md,
// "Erasing a user"), as ErasureProgress.Step names them.
var ErasureSteps = []string{"conversations", "files", "learning_jobs", "late_conversations", "record", "write_ahead_logs"}

// ErasureDone is ErasureProgress.Step once every step is done.
const ErasureDone = "done"

// Statuses of an Erasure.
const (
	ErasureQueued    = "queued"
	ErasureRunning   = "running"
	ErasureRetrying  = "retrying"
	ErasureCompleted = "completed"
	ErasureFailed    = "failed"
)

// erasureRoutes are the user's erasure of themself (Config.Erasure).
func (h *handler) erasureRoutes(r chi.Router) {
	r.Delete("/me", h.handleErase)
	r.Get("/me/erasure", h.handleErasure)
}

// handleErase is DELETE /api/v1/me: 202 with the erasure to poll. Asking
// again while it runs, or after, is answered the same way: the running
// one, or a new one that erases what came since.
func (h *handler) handleErase(w http.ResponseWriter, r *http.Request) {
	e, err := h.cfg.Erasure.Erase(r.Context(), runs.UserFrom(r.Context()))
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/me/erasure")
	jsonbody.Write(w, http.StatusAccepted, e)
}

// handleErasure is GET /api/v1/me/erasure: the caller's latest erasure,
// 404 when none is known.
func (h *handler) handleErasure(w http.ResponseWriter, r *http.Request) {
	e, err := h.cfg.Erasure.Erasure(r.Context(), runs.UserFrom(r.Context()))
	if errors.Is(err, ErrNoErasure) {
		h.cfg.Error(w, r, httperr.New(http.StatusNotFound, "not_found", "no erasure of yours is known: DELETE /api/v1/me asks for one"))
		return
	}
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, e)
}
