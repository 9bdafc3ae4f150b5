package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/a2a"
	"github.com/trellis-ai/trellis/api/admin"
	"github.com/trellis-ai/trellis/api/docs"
	"github.com/trellis-ai/trellis/api/files"
	"github.com/trellis-ai/trellis/api/me"
	"github.com/trellis-ai/trellis/api/metrics"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/api/signin"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// Server is the chat service over HTTP: build it with New over a
// finished run service, serve Handler, call Recover once at start and
// Shutdown at the end.
type Server struct {
	cfg     Config
	store   store.Store
	log     *slog.Logger
	metrics *metrics.Collector
	runs    *runs.Service
	handler http.Handler

	// authLimiter counts invalid credentials per client address (which
	// clientIP finds); nil in local mode (no keys, nothing to guess) or
	// when switched off.
	authLimiter *middleware.Limiter
	// clientIP, authenticate and limitRate guard every authenticated
	// route, in that order (see package middleware).
	clientIP, authenticate, limitRate func(http.Handler) http.Handler

	// health is what the probes know of the store (see health).
	health health
	// docs serves the documents endpoints; nil without Config.Documents.
	docs *docs.Handler
	// files serves the workspace's endpoints; nil without
	// Config.Workspace.
	files *files.Handler
	// a2a serves the A2A agent card and JSON-RPC binding.
	a2a *a2a.Handler
}

// New builds the server and its router over cfg.Runs; it builds no run
// service, agent or model registry of its own.
func New(cfg Config) (*Server, error) {
	if cfg.Runs == nil || cfg.Store == nil {
		return nil, errors.New("api: new server: a run service and its store are required")
	}
	proxies, err := middleware.ParseTrustedProxies(cfg.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("api: new server: %w", err)
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, store: cfg.Store, runs: cfg.Runs, log: cfg.Logger, metrics: cfg.Metrics,
		clientIP:  middleware.ClientIP(proxies),
		limitRate: middleware.LimitRate(middleware.NewLimiter(cfg.Limits.RatePerMinute, cfg.Limits.Burst))}
	ac := middleware.AuthConfig{Keys: cfg.Keys, Tokens: cfg.Tokens}
	if cfg.IssuedKeys != nil {
		ac.Stored = func(ctx context.Context, hash [sha256.Size]byte) (string, error) {
			user, err := cfg.IssuedKeys.KeyUser(ctx, hash)
			if errors.Is(err, store.ErrNotFound) {
				return "", nil
			}
			return user, err
		}
	}
	if cfg.SignIn != nil {
		ac.Sessions = cfg.SignIn.SessionUser
	}
	if !s.localMode() {
		s.authLimiter = middleware.NewLimiter(cfg.Limits.AuthFailuresPerMinute, cfg.Limits.AuthFailureBurst)
	}
	if s.metrics == nil {
		s.metrics = metrics.New()
	}
	ac.Failures, ac.Refused = s.authLimiter, s.metrics.AuthFailed
	s.authenticate = middleware.Authenticate(ac)
	if cfg.Documents != nil {
		s.docs = docs.New(docs.Config{Documents: cfg.Documents, Error: s.writeError, Logger: s.log})
	}
	if cfg.Workspace != nil {
		fcfg := files.Config{Files: cfg.Workspace, Projects: cfg.Workspace, Error: s.writeError,
			MaxFileBytes: cfg.Workspace.Limits().FileBytes, LinkKey: cfg.FileLinkKey}
		if s.docs != nil {
			// A workspace file joins the documents as an upload does.
			fcfg.Index = func(ctx context.Context, user, conversation, filename string, data []byte) (any, error) {
				return s.docs.Upload(ctx, ingest.Upload{UserID: user, ConversationID: conversation, Filename: filename, Data: data})
			}
		}
		s.files = files.New(fcfg)
	}
	s.a2a = s.newA2A()
	s.handler = s.routes()
	return s, nil
}

// Shutdown refuses new runs, stops the live ones at their next checkpoint
// (their streams end with run.interrupted, reason shutdown, and Recover
// continues them at the next start), parks runs waiting for approvals,
// and ends every stream. It waits for ctx's deadline at most, or
// Config.ShutdownTimeout when ctx has none. Stop the HTTP server from
// accepting connections first (http.Server.Shutdown, concurrently: it
// waits for the streams Shutdown ends).
func (s *Server) Shutdown(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
		defer cancel()
	}
	return s.runs.Shutdown(ctx)
}

// Recover continues the runs a previous process left, of every user with
// a run running or parked (store ActiveUsers), however they sign in: runs still running
// in the store under another owner (a shutdown or a crash) continue from
// their last checkpoint, and parked runs whose approvals were answered
// without being resumed are resumed. Call it once at start, before
// serving. Without a Cluster it takes over every running run it did not
// start, so no other live process may share the store; with one it
// takes only the runs of processes that are gone (ClaimOrphans), as
// every live process keeps doing every ClaimInterval. It returns how
// many runs it continued.
func (s *Server) Recover(ctx context.Context) (int, error) {
	users, err := s.store.ActiveUsers(ctx)
	if err != nil {
		return 0, fmt.Errorf("api: recover: %w", err)
	}
	return s.runs.Recover(ctx, users)
}

// localMode: no key authenticates anyone, and every request is
// middleware.LocalUser.
func (s *Server) localMode() bool {
	return len(s.cfg.Keys) == 0 && s.cfg.IssuedKeys == nil && s.cfg.Tokens == nil && s.cfg.SignIn == nil
}

// operators lets through only the server's operators (Config.Admins; in
// local mode, the local user).
func (s *Server) operators() func(http.Handler) http.Handler {
	if s.localMode() {
		return middleware.Operators([]string{middleware.LocalUser})
	}
	return middleware.Operators(s.cfg.Admins)
}

// Handler serves the API, /healthz, /readyz, /metrics, and /mcp and the
// web page when configured.
func (s *Server) Handler() http.Handler { return s.handler }

// Runs is the server's run service.
func (s *Server) Runs() *runs.Service { return s.runs }

// Metrics is the server's collector.
func (s *Server) Metrics() *metrics.Collector { return s.metrics }

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RequestID, middleware.LogRequests(s.log, s.metrics.Answered), middleware.CORS(s.cfg.CORSOrigins))
	notFound := func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusNotFound, "not_found", "no such endpoint; see API.md"))
	}
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "this endpoint does not take "+r.Method))
	})
	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	r.Method(http.MethodGet, "/metrics", s.metrics.Handler(s.log))
	r.Get(a2a.CardPath, s.a2a.Card)
	r.Route("/api/v1", func(r chi.Router) {
		r.Use(s.limitBody, s.clientIP, s.authenticate, s.limitRate)
		r.NotFound(notFound)
		r.Post("/chat", s.handleChat)
		r.Post("/chat/sync", s.handleChatSync)
		r.Get("/conversations", s.handleListConversations)
		r.Get("/conversations/{id}", s.handleGetConversation)
		r.Patch("/conversations/{id}", s.handleRenameConversation)
		r.Delete("/conversations/{id}", s.handleDeleteConversation)
		r.Get("/conversations/{id}/stream", s.handleStream)
		r.Post("/conversations/{id}/cancel", s.handleCancel)
		r.Post("/conversations/{id}/runs/{run_id}/edit", s.handleEdit)
		r.Post("/conversations/{id}/runs/{run_id}/answers", s.handleAnswers)
		r.Get("/conversations/{id}/queue", s.handleQueue)
		r.Delete("/conversations/{id}/queue/{run_id}", s.handleCancelQueued)
		r.Get("/conversations/{id}/runs/{run_id}/events", s.handleRunEvents)
		r.Post("/conversations/{id}/runs/{run_id}/retry", s.handleRetry)
		r.Get("/conversations/{id}/branches", s.handleBranches)
		r.Get("/conversations/{id}/branches/{run_id}", s.handleBranch)
		r.Post("/conversations/{id}/branches/{run_id}/activate", s.handleActivateBranch)
		r.Get("/approvals/pending", s.handlePending(events.PendingApproval, "approvals"))
		r.Post("/approvals/{approval_id}", s.handleApproval)
		r.Post("/elicitation/respond", s.handleElicitationRespond)
		r.Get("/elicitation/pending", s.handlePending(events.PendingElicitation, "elicitations"))
		r.Get("/clarifications/pending", s.handlePending(events.PendingClarification, "clarifications"))
		r.Delete("/elicitation/{id}", s.handleElicitationCancel)
		r.Get("/uncertain-calls/pending", s.handlePending(events.PendingUncertainCall, "uncertain_calls"))
		r.Post("/uncertain-calls/{uncertain_call_id}", s.handleUncertainCall)
		r.Get("/tools", s.handleTools)
		r.Get("/conversations/{id}/tasks", s.handleTasks)
		r.Patch("/conversations/{id}/tasks/{task_id}", s.handleEditTask)
		r.Get("/agent/graph", s.handleAgentGraph)
		if s.docs != nil {
			s.docs.Routes(r)
		}
		if s.files != nil {
			s.files.Routes(r)
		}
		me.Routes(r, me.Config{Runs: s.runs, Usage: s.store, Cognition: s.cfg.Cognition, Erasure: s.cfg.Erasure,
			Operators: s.operators(), Error: s.writeError})
		admin.Routes(r, admin.Config{Keys: s.cfg.IssuedKeys, Webhooks: s.cfg.Webhooks, Operators: s.operators(), Error: s.writeError})
	})
	r.Group(func(r chi.Router) {
		r.Use(s.limitBody, s.clientIP, s.authenticate, s.limitRate)
		s.protocolRoutes(r)
	})
	if s.files != nil {
		// A download link is its own credential.
		r.Group(func(r chi.Router) {
			r.Use(s.limitBody)
			s.files.SignedRoutes(r)
		})
	}
	// /auth answers JSON even without sign-in, so that the page, which
	// asks GET /auth/session, tells "no sign-in here" (404) from the
	// page itself.
	r.Route("/auth", func(r chi.Router) {
		r.Use(s.limitBody, s.clientIP)
		r.NotFound(notFound)
		if s.cfg.SignIn != nil {
			s.cfg.SignIn.Routes(r, signin.Server{Failures: s.authLimiter, Refused: s.metrics.AuthFailed, Error: s.writeError, Logger: s.log})
		}
	})
	if s.cfg.Web != nil {
		r.NotFound(s.cfg.Web.ServeHTTP)
	} else {
		r.NotFound(notFound)
	}
	return r
}

// limitBody caps every API request body at Limits.MaxBodyBytes, but a
// document upload's at the document limit and its framing, and a
// workspace file's at the file limit, when that is more.
func (s *Server) limitBody(next http.Handler) http.Handler {
	limit := s.cfg.Limits.MaxBodyBytes
	if limit < 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := limit
		upload := s.docs != nil && r.Method == http.MethodPost && r.URL.Path == docs.UploadPath
		fileUpload := s.files != nil && files.IsUpload(r)
		switch {
		case upload:
			limit = s.docs.UploadLimit(limit)
		case fileUpload:
			limit = s.files.UploadLimit(limit)
		}
		if r.ContentLength > limit {
			var err error = &http.MaxBytesError{Limit: limit}
			switch {
			case upload:
				err = s.docs.TooLarge()
			case fileUpload:
				err = s.files.TooLarge()
			}
			s.writeError(w, r, err)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}

// userOf returns the request's user, as middleware.Authenticate named it.
func userOf(r *http.Request) string { return runs.UserFrom(r.Context()) }
