package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/store"
)

// Config is what the operators' endpoints serve, and how they answer.
type Config struct {
	// Keys are the keys issued in the service, behind /admin/keys; nil
	// (local mode, where no key is checked) answers those endpoints 409.
	Keys store.Keys
	// Webhooks is the delivery log behind /webhooks/deliveries; nil
	// leaves those endpoints out (404).
	Webhooks Webhooks
	// Operators lets through only the server's operators (403 for the
	// others). Required.
	Operators func(http.Handler) http.Handler
	// Error answers an error as the native API answers it. Required.
	Error func(http.ResponseWriter, *http.Request, error)
}

// handler serves the operators' endpoints.
type handler struct{ cfg Config }

// Routes adds the operators' endpoints to r, the router of /api/v1.
func Routes(r chi.Router, cfg Config) {
	h := &handler{cfg: cfg}
	h.keyRoutes(r)
	if cfg.Webhooks != nil {
		h.webhookRoutes(r)
	}
}
