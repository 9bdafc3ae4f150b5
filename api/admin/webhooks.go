package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/paging"
	"github.com/trellis-ai/trellis/store"
)

// Webhooks is the log of the deliveries to the operator's webhook
// endpoints, which GET /api/v1/webhooks/deliveries reads and POST
// /api/v1/webhooks/deliveries/{id}/redeliver acts on (webhooks.Service).
type Webhooks interface {
	// Deliveries returns a page of the log, newest first.
	Deliveries(ctx context.Context, page store.Page) (store.WebhookDeliveryPage, error)
	// Redeliver sends a delivered or failed delivery again; it returns
	// store.ErrNotFound for an unknown one and store.ErrConflict for one
	// still pending.
	Redeliver(ctx context.Context, id string) (store.WebhookDelivery, error)
}

// webhookRoutes are the delivery log (Config.Webhooks): it spans every
// user, so only operators read it.
func (h *handler) webhookRoutes(r chi.Router) {
	r.With(h.cfg.Operators).Get("/webhooks/deliveries", h.handleDeliveries)
	r.With(h.cfg.Operators).Post("/webhooks/deliveries/{id}/redeliver", h.handleRedeliver)
}

// handleDeliveries is GET /api/v1/webhooks/deliveries?limit=&cursor=.
func (h *handler) handleDeliveries(w http.ResponseWriter, r *http.Request) {
	page, err := paging.Page(r)
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	p, err := h.cfg.Webhooks.Deliveries(r.Context(), page)
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, p)
}

// errDeliveryPending answers a redelivery of a delivery not yet done.
var errDeliveryPending = httperr.New(http.StatusConflict, "delivery_pending",
	"the delivery is pending: its attempts go on; redeliver it once it is delivered or failed")

// handleRedeliver is POST /api/v1/webhooks/deliveries/{id}/redeliver:
// 202 with the delivery, pending again.
func (h *handler) handleRedeliver(w http.ResponseWriter, r *http.Request) {
	d, err := h.cfg.Webhooks.Redeliver(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrConflict) {
		err = errDeliveryPending
	}
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusAccepted, d)
}
