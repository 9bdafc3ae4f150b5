package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/api/paging"
	"github.com/trellis-ai/trellis/store"
)

// keyRoutes are the operators' management of the keys issued in the
// service (Config.Keys).
func (h *handler) keyRoutes(r chi.Router) {
	r.With(h.cfg.Operators).Route("/admin/keys", func(r chi.Router) {
		r.Use(h.needsIssuedKeys)
		r.Post("/", h.handleCreateKey)
		r.Get("/", h.handleListKeys)
		r.Delete("/{id}", h.handleRevokeKey)
	})
}

// needsIssuedKeys answers 409 where no key is checked: a key made in
// local mode would authenticate nobody until a restart changed the
// mode, which nothing here says.
func (h *handler) needsIssuedKeys(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.cfg.Keys == nil {
			h.cfg.Error(w, r, httperr.New(http.StatusConflict, "local_mode",
				"the server runs in local mode and checks no key; start it with TRELLIS_AUTH=keys (or TRELLIS_API_KEYS) to issue keys"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// newKeyBody is the body of POST /api/v1/admin/keys.
type newKeyBody struct {
	UserID string `json:"user_id"`
	Name   string `json:"name"`
}

// issuedKey is a key as POST /api/v1/admin/keys answers it: the record,
// and the key itself, shown this once.
type issuedKey struct {
	store.Key
	Secret string `json:"key"`
}

// handleCreateKey is POST /api/v1/admin/keys: 201 with the new key.
func (h *handler) handleCreateKey(w http.ResponseWriter, r *http.Request) {
	var body newKeyBody
	if err := jsonbody.Decode(r, &body); err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	key, hash, shown := middleware.NewKey()
	k, err := h.cfg.Keys.CreateKey(r.Context(), store.NewKey{UserID: body.UserID, Name: body.Name, Hash: hash, Prefix: shown})
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusCreated, issuedKey{Key: k, Secret: string(key)})
}

// handleListKeys is GET /api/v1/admin/keys?user_id=&limit=&cursor=.
func (h *handler) handleListKeys(w http.ResponseWriter, r *http.Request) {
	page, err := paging.Page(r)
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	p, err := h.cfg.Keys.ListKeys(r.Context(), r.URL.Query().Get("user_id"), page)
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, p)
}

// handleRevokeKey is DELETE /api/v1/admin/keys/{id}: 204, or 404.
func (h *handler) handleRevokeKey(w http.ResponseWriter, r *http.Request) {
	if _, err := h.cfg.Keys.RevokeKey(r.Context(), chi.URLParam(r, "id")); err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
