package api

import (
	"net/http"

	"github.com/trellis-ai/trellis/api/middleware"
)

// operators lets through only the server's operators (Config.Admins; in
// local mode, the local user).
func (s *Server) operators() func(http.Handler) http.Handler {
	if len(s.cfg.Keys) == 0 {
		return middleware.Operators([]string{middleware.LocalUser})
	}
	return middleware.Operators(s.cfg.Admins)
}
