package me

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/paging"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// usageRoutes are the usage record's views: the user's own, and every
// user's for the operators.
func (h *handler) usageRoutes(r chi.Router) {
	r.Get("/me/usage", h.handleMyUsage)
	r.With(h.cfg.Operators).Get("/admin/usage", h.handleAdminUsage)
}

// usageQuota is the user's monthly quota as GET /api/v1/me/usage shows
// it; absent when the server sets none.
type usageQuota struct {
	MonthlyTokens int64     `json:"monthly_tokens"`
	UsedTokens    int64     `json:"used_tokens"`
	ResetsAt      time.Time `json:"resets_at"`
}

// myUsage is GET /api/v1/me/usage's answer.
type myUsage struct {
	store.UsagePage
	Quota *usageQuota `json:"quota"`
}

// handleMyUsage is GET /api/v1/me/usage?from=&to=&limit=&cursor=.
func (h *handler) handleMyUsage(w http.ResponseWriter, r *http.Request) {
	q, err := usageQuery(r, "from", "to", "limit", "cursor")
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	q.UserID = runs.UserFrom(r.Context())
	p, err := h.cfg.Usage.UsageDays(r.Context(), q)
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	out := myUsage{UsagePage: p}
	used, quota, err := h.cfg.Runs.MonthUsage(r.Context(), q.UserID)
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	if quota > 0 {
		now := time.Now().UTC()
		out.Quota = &usageQuota{MonthlyTokens: quota, UsedTokens: used,
			ResetsAt: time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)}
	}
	jsonbody.Write(w, http.StatusOK, out)
}

// handleAdminUsage is GET /api/v1/admin/usage?user_id=&from=&to=&limit=&cursor=.
func (h *handler) handleAdminUsage(w http.ResponseWriter, r *http.Request) {
	q, err := usageQuery(r, "user_id", "from", "to", "limit", "cursor")
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	q.UserID = r.URL.Query().Get("user_id")
	p, err := h.cfg.Usage.UsageDays(r.Context(), q)
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, p)
}

// usageQuery reads a usage view's range and page, refusing a parameter
// not in known: from defaults to the first day of this month (UTC), to
// to today; the store checks both.
func usageQuery(r *http.Request, known ...string) (store.UsageQuery, error) {
	for name := range r.URL.Query() {
		if !slices.Contains(known, name) {
			return store.UsageQuery{}, httperr.New(http.StatusBadRequest, "invalid_parameter",
				fmt.Sprintf("unknown parameter %q; this endpoint takes %v", name, known))
		}
	}
	now := time.Now().UTC()
	q := store.UsageQuery{From: now.Format("2006-01") + "-01", To: now.Format(store.DayFormat)}
	if v := r.URL.Query().Get("from"); v != "" {
		q.From = v
	}
	if v := r.URL.Query().Get("to"); v != "" {
		q.To = v
	}
	if _, _, err := q.Days(); err != nil {
		return q, httperr.New(http.StatusBadRequest, "invalid_parameter", err.Error())
	}
	page, err := paging.Page(r)
	q.Page = page
	return q, err
}
