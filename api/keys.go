package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/api/paging"
	"github.com/trellis-ai/trellis/store"
)

// operators lets through only the server's operators (Config.Admins; in
// local mode, the local user).
func (s *Server) operators() func(http.Handler) http.Handler {
	if s.localMode() {
		return middleware.Operators([]string{middleware.LocalUser})
	}
	return middleware.Operators(s.cfg.Admins)
}

// keyRoutes are the operators' management of the keys issued in the
// service (Config.IssuedKeys).
func (s *Server) keyRoutes(r chi.Router) {
	r.With(s.operators()).Route("/admin/keys", func(r chi.Router) {
		r.Use(s.needsIssuedKeys)
		r.Post("/", s.handleCreateKey)
		r.Get("/", s.handleListKeys)
		r.Delete("/{id}", s.handleRevokeKey)
	})
}

// needsIssuedKeys answers 409 where no key is checked: a key made in
// local mode would authenticate nobody until a restart changed the
// mode, which nothing here says.
func (s *Server) needsIssuedKeys(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.IssuedKeys == nil {
			s.writeError(w, r, errorf(http.StatusConflict, "local_mode",
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
func (s *Server) handleCreateKey(w http.ResponseWriter, r *http.Request) {
	var body newKeyBody
	if err := jsonbody.Decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	key, hash, shown := middleware.NewKey()
	k, err := s.cfg.IssuedKeys.CreateKey(r.Context(), store.NewKey{UserID: body.UserID, Name: body.Name, Hash: hash, Prefix: shown})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusCreated, issuedKey{Key: k, Secret: string(key)})
}

// handleListKeys is GET /api/v1/admin/keys?user_id=&limit=&cursor=.
func (s *Server) handleListKeys(w http.ResponseWriter, r *http.Request) {
	page, err := paging.Page(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.cfg.IssuedKeys.ListKeys(r.Context(), r.URL.Query().Get("user_id"), page)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, p)
}

// handleRevokeKey is DELETE /api/v1/admin/keys/{id}: 204, or 404.
func (s *Server) handleRevokeKey(w http.ResponseWriter, r *http.Request) {
	if _, err := s.cfg.IssuedKeys.RevokeKey(r.Context(), chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
