package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/a2a"
	"github.com/trellis-ai/trellis/api/agui"
	"github.com/trellis-ai/trellis/api/aisdk"
	"github.com/trellis-ai/trellis/api/langgraph"
	"github.com/trellis-ai/trellis/api/openai"
)

// protocolRoutes mounts the surfaces that speak someone else's protocol:
// Trellis' tools over MCP and the client-protocol adapters. They sit
// behind the same body limit, authentication and rate limit as /api/v1,
// and each reads its user with runs.UserFrom; an adapter drives runs
// only through the run service.
func (s *Server) protocolRoutes(r chi.Router) {
	if s.cfg.MCP != nil {
		r.Mount("/mcp", s.cfg.MCP)
	}
	ag := agui.New(agui.Config{Runs: s.runs, Logger: s.log, Heartbeat: s.cfg.Heartbeat,
		WriteTimeout: s.cfg.StreamWriteTimeout})
	r.Method(http.MethodPost, "/ag-ui", ag)
	r.Get("/ag-ui/capabilities", ag.Capabilities)
	ai := aisdk.New(aisdk.Config{Runs: s.runs, Logger: s.log, Heartbeat: s.cfg.Heartbeat,
		WriteTimeout: s.cfg.StreamWriteTimeout})
	r.Post("/api/ai-sdk/chat", ai.Chat)
	r.Get("/api/ai-sdk/chat/{id}/stream", ai.Resume)
	// The LangGraph Agent Server API subset: the SDK's apiUrl is
	// <server>/langgraph.
	r.Mount("/langgraph", langgraph.New(langgraph.Config{Runs: s.runs, Heartbeat: s.cfg.Heartbeat,
		WriteTimeout: s.cfg.StreamWriteTimeout, Logger: s.log}))
	r.Mount("/v1", openai.Handler(openai.Config{Runs: s.runs, Logger: s.log, WriteTimeout: s.cfg.StreamWriteTimeout}))
	r.Post(a2a.Path, s.a2a.RPC)
}

// newA2A is the A2A handler: its JSON-RPC binding among the protocol
// routes, its agent card public (discovery comes before credentials).
func (s *Server) newA2A() *a2a.Handler {
	sec := a2a.Security{Keys: len(s.cfg.Keys) > 0 || s.cfg.IssuedKeys != nil}
	if s.cfg.Tokens != nil {
		sec.OIDCIssuer = s.cfg.OIDCIssuer
	}
	return a2a.New(a2a.Config{Runs: s.runs, Tools: s.cfg.Tools, Security: sec, Version: s.cfg.Version, Logger: s.log,
		Heartbeat: s.cfg.Heartbeat, WriteTimeout: s.cfg.StreamWriteTimeout})
}
