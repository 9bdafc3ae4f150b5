package me

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// Config is what a user's endpoints serve, and how they answer.
type Config struct {
	// Runs is the run service, for the user's monthly quota
	// (MonthUsage). Required.
	Runs *runs.Service
	// Usage is the usage record behind /me/usage and /admin/usage.
	// Required.
	Usage store.UsageLog
	// Cognition serves /me/profile, /me/memories and
	// /cognition/identity; nil leaves those endpoints out (404).
	Cognition *cognition.Service
	// Erasure serves DELETE /me and GET /me/erasure; nil leaves those
	// endpoints out (404).
	Erasure Eraser
	// Operators lets through only the server's operators (403 for the
	// others), for the views that span every user. Required.
	Operators func(http.Handler) http.Handler
	// Error answers an error as the native API answers it. Required.
	Error func(http.ResponseWriter, *http.Request, error)
}

// handler serves a user's endpoints.
type handler struct{ cfg Config }

// Routes adds a user's endpoints to r, the router of /api/v1.
func Routes(r chi.Router, cfg Config) {
	h := &handler{cfg: cfg}
	if cfg.Cognition != nil {
		h.memoryRoutes(r)
	}
	if cfg.Erasure != nil {
		h.erasureRoutes(r)
	}
	h.usageRoutes(r)
}
