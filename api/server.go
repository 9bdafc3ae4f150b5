package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/mcp/elicit"
	"github.com/trellis-ai/trellis/nodes"
)

// Server is the chat service: build it with New, serve Handler, call
// Recover once at start and Shutdown at the end.
type Server struct {
	cfg     Config
	store   store.Store
	models  *llm.Registry
	agent   *nodes.Agent
	elicit  *elicit.Manager
	log     *slog.Logger
	metrics *Metrics
	auth    *authenticator
	limiter *rateLimiter
	runs    *runManager
	handler http.Handler
	// pageReads holds a slot while a replay reads a page of the store:
	// on SQLite each concurrent read is a connection of its own, whose
	// page cache lives outside the Go heap, so many replays at once
	// would otherwise hold a connection each.
	pageReads chan struct{}

	// authLimiter counts invalid credentials per client address (which
	// clientIP finds); nil in local mode (no keys, nothing to guess) or
	// when switched off.
	authLimiter *rateLimiter
	clientIP    func(http.Handler) http.Handler

	// life ends when Shutdown has parked the runs: streams that follow
	// parked runs end with it.
	life context.Context
	end  context.CancelFunc
	// bg holds the cluster's goroutines (see startCluster).
	bg sync.WaitGroup
	// health is what the probes know of the database (see health).
	health health
}

// New builds the server and its agent (over cfg's models, tools and
// checkpointer, with the server's answer hook and elicitor).
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("api: new server: a store is required")
	}
	if cfg.Cluster != nil && (cfg.Notices == nil || cfg.Owner == "") {
		return nil, errors.New("api: new server: a Cluster needs Notices listening as Owner, and Owner set")
	}
	proxies, err := parseTrustedProxies(cfg.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("api: new server: %w", err)
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, store: cfg.Store, models: cfg.Models, elicit: cfg.Elicit, log: cfg.Logger, metrics: cfg.Metrics,
		auth: newAuthenticator(cfg.Keys), limiter: newRateLimiter(cfg.Limits.RatePerMinute, cfg.Limits.Burst),
		clientIP:  clientIP(proxies),
		pageReads: make(chan struct{}, max(4, runtime.GOMAXPROCS(0)))}
	if !s.auth.local() {
		s.authLimiter = newRateLimiter(cfg.Limits.AuthFailuresPerMinute, cfg.Limits.AuthFailureBurst)
	}
	if s.models == nil {
		m, err := llm.NewRegistry(llm.Config{})
		if err != nil {
			return nil, fmt.Errorf("api: new server: %w", err)
		}
		s.models = m
	}
	if s.elicit == nil {
		s.elicit = elicit.NewManager(elicit.Config{Timeout: cfg.ElicitTimeout, Logger: cfg.Logger})
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	s.runs = newRunManager(s)

	opts := cfg.Agent
	then := opts.Hooks.OnAnswer
	opts.Hooks.OnAnswer = func(ctx context.Context, a nodes.Answer) error {
		if err := s.runs.onAnswer(ctx, a); err != nil {
			return err
		}
		if then != nil {
			return then(ctx, a)
		}
		return nil
	}
	opts.Elicitor = elicitor{s.runs}
	if opts.Logger == nil {
		opts.Logger = cfg.Logger
	}
	agent, err := nodes.New(s.models, cfg.Tools, cfg.Checkpointer, opts)
	if err != nil {
		return nil, fmt.Errorf("api: new server: %w", err)
	}
	s.agent, s.runs.agent = agent, agent
	s.life, s.end = context.WithCancel(context.Background())
	s.handler = s.routes()
	s.startCluster()
	return s, nil
}

// Handler serves the API, /healthz, /readyz, /metrics, and /mcp and the
// web page when configured.
func (s *Server) Handler() http.Handler { return s.handler }

// Agent is the server's agent.
func (s *Server) Agent() *nodes.Agent { return s.agent }

// Metrics is the server's collector.
func (s *Server) Metrics() *Metrics { return s.metrics }

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(withRequestID, s.logRequests, s.cors)
	notFound := func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusNotFound, "not_found", "no such endpoint; see API.md"))
	}
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "this endpoint does not take "+r.Method))
	})
	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	r.Method(http.MethodGet, "/metrics", s.metrics.handler(s.log))
	r.Route("/api/v1", func(r chi.Router) {
		r.Use(s.limitBody, s.clientIP, s.authenticate, s.limitRate)
		r.NotFound(notFound)
		r.Post("/chat", s.handleChat)
		r.Post("/chat/sync", s.handleChatSync)
		r.Get("/conversations", s.handleListConversations)
		r.Get("/conversations/{id}", s.handleGetConversation)
		r.Delete("/conversations/{id}", s.handleDeleteConversation)
		r.Get("/conversations/{id}/stream", s.handleStream)
		r.Post("/conversations/{id}/cancel", s.handleCancel)
		r.Post("/conversations/{id}/runs/{run_id}/edit", s.handleEdit)
		r.Get("/conversations/{id}/runs/{run_id}/events", s.handleRunEvents)
		r.Get("/approvals/pending", s.handlePendingApprovals)
		r.Post("/approvals/{approval_id}", s.handleApproval)
		r.Post("/elicitation/respond", s.handleElicitationRespond)
		r.Get("/elicitation/pending", s.handlePendingElicitations)
		r.Delete("/elicitation/{id}", s.handleElicitationCancel)
		r.Get("/tools", s.handleTools)
	})
	if s.cfg.MCP != nil {
		r.Group(func(r chi.Router) {
			r.Use(s.limitBody, s.clientIP, s.authenticate, s.limitRate)
			r.Mount("/mcp", s.cfg.MCP)
		})
	}
	if s.cfg.Web != nil {
		r.NotFound(s.cfg.Web.ServeHTTP)
	} else {
		r.NotFound(notFound)
	}
	return r
}

// limitBody caps every API request body at Limits.MaxBodyBytes.
func (s *Server) limitBody(next http.Handler) http.Handler {
	limit := s.cfg.Limits.MaxBodyBytes
	if limit < 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			s.writeError(w, r, &http.MaxBytesError{Limit: limit})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}
