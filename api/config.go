package api

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/trellis-ai/trellis/api/admin"
	"github.com/trellis-ai/trellis/api/files"
	"github.com/trellis-ai/trellis/api/me"
	"github.com/trellis-ai/trellis/api/metrics"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/api/signin"
	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// Config configures a Server: the finished services it serves, and how
// it serves them over HTTP. Runs and Store are required: the zero value
// of every other field works, and each states its default. What a run
// does (its agent, models, checkpoints, timeouts, cluster) is the run
// service's; cmd/trellis builds it first (see runs.Config).
type Config struct {
	// Runs is the run service every run goes through. Required.
	Runs *runs.Service
	// Store is the record the read endpoints (conversations, their runs
	// and events, pending human requests) and the probes read; the run
	// service's. Required.
	Store store.Store
	// Tools is what GET /api/v1/tools lists: the one provider the run
	// service's agent calls; nil lists none.
	Tools *operators.Provider
	// Documents is the document service behind /api/v1/documents; nil
	// leaves those endpoints out (404).
	Documents *ingest.Service
	// Workspace is the agent's workspace behind /api/v1/files,
	// /api/v1/projects and PUT /api/v1/conversations/{id}/project
	// (*workspace.Workspaces); nil leaves those endpoints out (404).
	Workspace files.Workspace
	// FileLinkKey signs the workspace's download links: give every
	// process of a cluster the same, so that any serves a link another
	// made. Nil means a random key of this process's.
	FileLinkKey []byte
	// Cognition serves /api/v1/me/profile, /me/memories and
	// /cognition/identity; nil leaves those endpoints out (404).
	Cognition *cognition.Service
	// Erasure erases users: DELETE /api/v1/me and GET /api/v1/me/erasure;
	// nil leaves those endpoints out (404).
	Erasure me.Eraser
	// Webhooks is the delivery log behind /api/v1/webhooks/deliveries,
	// for operators (Admins); nil leaves those endpoints out (404).
	Webhooks admin.Webhooks

	// Keys maps API keys to user ids. Empty means local mode: no
	// authentication, every request is middleware.LocalUser ("local").
	Keys map[middleware.APIKey]string
	// IssuedKeys are the keys issued in the service (trellis keys, and
	// the admins at /api/v1/admin/keys): they authenticate beside Keys.
	// Nil with no Keys is local mode, where the admin endpoints of keys
	// answer 409.
	IssuedKeys store.Keys
	// Tokens names the user of a bearer JWT of the configured OpenID
	// Connect issuer (middleware.NewOIDC), beside the keys; nil takes no
	// tokens. Set, it turns authentication on.
	Tokens middleware.TokenUser
	// OIDCIssuer is the issuer of Tokens, which the A2A agent card names
	// as an OpenID Connect security scheme; "" names none.
	OIDCIssuer string
	// SignIn is the web page's sign-in through the OpenID Connect
	// provider (signin.New): /auth/login, /auth/callback, /auth/session
	// and /auth/logout, and the session cookie beside the keys; nil
	// leaves /auth out (404). Set, it turns authentication on.
	SignIn *signin.SignIn
	// Admins are the users (as Keys, IssuedKeys or Tokens name them) who may read
	// what spans every user (GET /api/v1/cognition/identity, the webhook
	// delivery log) and manage the issued keys; the others get 403. In local mode the one local
	// user is an operator, whatever Admins says.
	Admins []string
	// Limits bound what one request and one user may ask.
	Limits Limits
	// TrustedProxies lists the reverse proxies in front of the server,
	// as CIDR prefixes or single addresses. A request whose TCP peer is
	// one of them is taken to come from the nearest address of its
	// X-Forwarded-For that is not; that address is what failed
	// authentication is limited by. Empty means X-Forwarded-For is never
	// read: the client is the TCP peer.
	TrustedProxies []string
	// CORSOrigins lists the origins browsers may call the API from ("*"
	// for any); empty means none (no CORS headers at all).
	CORSOrigins []string

	// Heartbeat is the interval of ": ping" comments on idle streams,
	// the native API's and every adapter's; 0 means, and more is capped
	// at, 15 s.
	Heartbeat time.Duration
	// StreamWriteTimeout bounds each write to a stream, the native
	// API's and every adapter's; a client that accepts nothing for that
	// long is dropped. 0 means 30 s.
	StreamWriteTimeout time.Duration
	// ShutdownTimeout bounds Shutdown when its context has no deadline;
	// 0 means 10 s.
	ShutdownTimeout time.Duration

	// Version is the server's version, as the A2A agent card tells it;
	// "" is "dev".
	Version string
	// Logger receives JSON-ready structured logs; nil discards.
	Logger *slog.Logger
	// UnhealthyAfter is how long the process may be without its database
	// (every check of Store failing, or a process of a cluster without
	// its session) before /healthz answers 503, for an orchestrator to
	// restart it; /readyz answers 503 at once. 0 means 60 s; negative
	// keeps /healthz at 200.
	UnhealthyAfter time.Duration
	// Metrics collects what /metrics serves; nil means a new collector,
	// which then counts only what the server sees. Make one first and
	// give it to the run service (runs.Config.Metrics), the tool
	// provider (BreakerChanged) and cognition (CognitionFailed) too.
	Metrics *metrics.Collector
	// Ready, when set, is asked by /readyz besides the store (required
	// MCP servers, say); an error answers 503.
	Ready func() error
	// MCP is mounted at /mcp when set (Trellis' tools over MCP), behind
	// the same authentication, body limit and rate limit as the API;
	// runs.UserFrom tells it the user.
	MCP http.Handler
	// Web serves the chat page at / when set (api/web's Handler).
	Web http.Handler
}

// Limits bound requests and users. Zero fields take their defaults;
// negative ones switch the limit off.
type Limits struct {
	// MaxBodyBytes caps a request body (413 beyond it); default 1 MiB.
	MaxBodyBytes int64
	// RatePerMinute is each user's sustained request rate on /api/v1
	// (429 with Retry-After beyond it); default 600.
	RatePerMinute int
	// Burst is how many requests a user may make at once; default 60.
	Burst int
	// MaxConcurrentRunsPerUser is the run service's cap on a user's runs
	// live in this process, which the 429 beyond it names: give the run
	// service the same (runs.Config.MaxRunsPerUser). Default 4.
	MaxConcurrentRunsPerUser int
	// AuthFailuresPerMinute is the sustained rate at which one client
	// address may send invalid API keys; beyond it, its requests with
	// credentials get 429 with Retry-After, unchecked. Default 10.
	// Local mode has no keys, so no such limit.
	AuthFailuresPerMinute int
	// AuthFailureBurst is how many invalid API keys one client address
	// may send at once; default 10.
	AuthFailureBurst int
}

// Defaults.
const (
	DefaultMaxBodyBytes       = 1 << 20
	DefaultRatePerMinute      = 600
	DefaultBurst              = 60
	DefaultMaxConcurrentRuns  = 4
	DefaultAuthFailuresPerMin = 10
	DefaultAuthFailureBurst   = 10
	DefaultHeartbeat          = 15 * time.Second
	DefaultStreamWriteTimeout = 30 * time.Second
	DefaultShutdownTimeout    = 10 * time.Second
	DefaultUnhealthyAfter     = time.Minute
)

// withDefaults returns c with its zero fields set.
func (c Config) withDefaults() Config {
	l := &c.Limits
	def64(&l.MaxBodyBytes, DefaultMaxBodyBytes)
	defInt(&l.RatePerMinute, DefaultRatePerMinute)
	defInt(&l.Burst, DefaultBurst)
	defInt(&l.MaxConcurrentRunsPerUser, DefaultMaxConcurrentRuns)
	defInt(&l.AuthFailuresPerMinute, DefaultAuthFailuresPerMin)
	defInt(&l.AuthFailureBurst, DefaultAuthFailureBurst)
	if c.Heartbeat <= 0 || c.Heartbeat > DefaultHeartbeat {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.StreamWriteTimeout <= 0 {
		c.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.UnhealthyAfter == 0 {
		c.UnhealthyAfter = DefaultUnhealthyAfter
	}
	return c
}

func defInt(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}

func def64(v *int64, d int64) {
	if *v == 0 {
		*v = d
	}
}
