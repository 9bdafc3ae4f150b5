package api

import "github.com/go-chi/chi/v5"

// protocolRoutes mounts the surfaces that speak someone else's protocol:
// Trellis' tools over MCP and the client-protocol adapters. They sit
// behind the same body limit, authentication and rate limit as /api/v1,
// and each reads its user with runs.UserFrom; an adapter drives runs
// only through the run service.
func (s *Server) protocolRoutes(r chi.Router) {
	if s.cfg.MCP != nil {
		r.Mount("/mcp", s.cfg.MCP)
	}
}
