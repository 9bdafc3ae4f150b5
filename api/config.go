package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// Config configures a Server. Only Store is required: the zero value of
// every other field works, and each states its default.
type Config struct {
	// Store is the service's record. Required.
	Store store.Store
	// Documents is the document service behind /api/v1/documents; nil
	// leaves those endpoints out (404).
	Documents *ingest.Service
	// Cognition is what the agent remembers of each user: it gives the
	// agent its context loader and learning hook (unless Agent has them)
	// and serves /api/v1/me/profile and /me/memories; nil leaves memory
	// off and those endpoints out (404).
	Cognition *cognition.Service
	// Models resolves the model names requests and the agent use; nil
	// means a registry holding only the offline model.
	Models *llm.Registry
	// Tools is the one provider of every tool; nil means no tools.
	Tools *operators.Provider
	// Checkpointer keeps the agent's conversation state: in Store's
	// PostgreSQL database, or in a SQLite file beside Store's (a file of
	// its own, so the two writers do not wait for each other; see
	// cmd/trellis). nil means memory: conversations forget their
	// state when the process ends, and Recover cannot continue runs.
	Checkpointer graph.Checkpointer
	// Agent configures the agent New builds. Its Hooks.OnAnswer and
	// Elicitor are the server's own: a given OnAnswer is called after
	// the server has stored the answer, a given Elicitor is ignored.
	Agent nodes.Options
	// ElicitTimeout is how long a tool's question waits for the user
	// while an SSE stream follows its run; then the run parks on it (the
	// question stays pending). 0 means runs.DefaultElicitTimeout (5
	// minutes).
	ElicitTimeout time.Duration

	// Keys maps API keys to user ids. Empty means local mode: no
	// authentication, every request is user "local".
	Keys map[APIKey]string
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

	// InterruptAfter is how long a run stopped for an approval keeps an
	// open stream waiting for the answer before it emits run.interrupted
	// and is parked. 0 means 60 s; negative parks at once.
	InterruptAfter time.Duration
	// CancelOnDisconnect cancels a run when the client of the request
	// that started it goes away. Default false: the run goes on and its
	// events can be watched again.
	CancelOnDisconnect bool
	// Heartbeat is the interval of ": ping" comments on idle streams; 0
	// means, and more is capped at, 15 s.
	Heartbeat time.Duration
	// StreamBuffer is how many events one stream may fall behind before
	// it is cut; 0 means 256.
	StreamBuffer int
	// StreamWriteTimeout bounds each write to a stream; a client that
	// accepts nothing for that long is dropped. 0 means 30 s.
	StreamWriteTimeout time.Duration
	// ShutdownTimeout bounds Shutdown when its context has no deadline;
	// 0 means 10 s.
	ShutdownTimeout time.Duration

	// Logger receives JSON-ready structured logs; nil discards.
	Logger *slog.Logger
	// Owner names this process in the runs it starts; "" means
	// host:pid:random. Recover continues running runs of other owners.
	Owner string
	// Cluster, with Notices, makes this process one of several sharing
	// Store's database (pgstore implements both; see its Listen):
	// approvals, elicitation answers and cancels for runs another live
	// process owns are sent to it, and the running runs of processes
	// that are gone are claimed every ClaimInterval and continued here.
	// Notices must listen as Owner, so Owner must be set. Nil: this
	// process is alone with the store, and Recover takes over every
	// running run of another owner.
	Cluster Cluster
	Notices Notices
	// ClaimInterval is how often a process of a Cluster looks for runs of
	// processes that are gone; 0 means 5 s.
	ClaimInterval time.Duration
	// UnhealthyAfter is how long the process may be without its database
	// (every check of Store failing, or a process of a Cluster without
	// its session) before /healthz answers 503, for an orchestrator to
	// restart it; /readyz answers 503 at once. 0 means 60 s; negative
	// keeps /healthz at 200.
	UnhealthyAfter time.Duration
	// Metrics collects what /metrics serves; nil means a new collector.
	// Make one first to give its BreakerChanged to the tool provider.
	Metrics *Metrics
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

// Cluster is what several processes sharing one database need of it
// (see runs.Cluster); pgstore.Store implements it.
type Cluster = runs.Cluster

// Notices are the notices other processes send this one (see
// runs.Notices): a pgstore.Listener listening as Config.Owner.
type Notices = runs.Notices

// DefaultClaimInterval is how often a process of a cluster looks for
// runs of processes that are gone.
const DefaultClaimInterval = runs.DefaultClaimInterval

// Limits bound requests and users. Zero fields take their defaults;
// negative ones switch the limit off.
type Limits struct {
	// MaxBodyBytes caps a request body (413 beyond it); default 1 MiB.
	MaxBodyBytes int64
	// MaxMessageRunes caps a chat message in characters (400 beyond
	// it); default 32,000.
	MaxMessageRunes int
	// RatePerMinute is each user's sustained request rate on /api/v1
	// (429 with Retry-After beyond it); default 600.
	RatePerMinute int
	// Burst is how many requests a user may make at once; default 60.
	Burst int
	// MaxConcurrentRunsPerUser caps a user's runs live in this process
	// (429 beyond it); default 4.
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
	DefaultMaxMessageRunes    = 32000
	DefaultRatePerMinute      = 600
	DefaultBurst              = 60
	DefaultMaxConcurrentRuns  = 4
	DefaultAuthFailuresPerMin = 10
	DefaultAuthFailureBurst   = 10
	DefaultInterruptAfter     = 60 * time.Second
	DefaultHeartbeat          = 15 * time.Second
	DefaultStreamBuffer       = 256
	DefaultStreamWriteTimeout = 30 * time.Second
	DefaultShutdownTimeout    = 10 * time.Second
	DefaultUnhealthyAfter     = time.Minute
)

// withDefaults returns c with its zero fields set.
func (c Config) withDefaults() Config {
	l := &c.Limits
	def64(&l.MaxBodyBytes, DefaultMaxBodyBytes)
	defInt(&l.MaxMessageRunes, DefaultMaxMessageRunes)
	defInt(&l.RatePerMinute, DefaultRatePerMinute)
	defInt(&l.Burst, DefaultBurst)
	defInt(&l.MaxConcurrentRunsPerUser, DefaultMaxConcurrentRuns)
	defInt(&l.AuthFailuresPerMinute, DefaultAuthFailuresPerMin)
	defInt(&l.AuthFailureBurst, DefaultAuthFailureBurst)
	if c.InterruptAfter == 0 {
		c.InterruptAfter = DefaultInterruptAfter
	}
	if c.Heartbeat <= 0 || c.Heartbeat > DefaultHeartbeat {
		c.Heartbeat = DefaultHeartbeat
	}
	defInt(&c.StreamBuffer, DefaultStreamBuffer)
	if c.StreamWriteTimeout <= 0 {
		c.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Owner == "" {
		c.Owner = NewOwner()
	}
	if c.ClaimInterval <= 0 {
		c.ClaimInterval = DefaultClaimInterval
	}
	if c.UnhealthyAfter == 0 {
		c.UnhealthyAfter = DefaultUnhealthyAfter
	}
	return c
}

// NewOwner returns a fresh owner name for this process: host:pid:random,
// unique per process start.
func NewOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), ids.Random("", 4))
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

// APIKey is a secret that authenticates a user. It never prints: its
// String and LogValue redact it.
type APIKey string

// String redacts the key.
func (k APIKey) String() string { return "[redacted]" }

// LogValue redacts the key.
func (k APIKey) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// ParseKeys reads TRELLIS_API_KEYS' format: comma-separated key:user
// pairs ("k1:alice,k2:bob"). An empty string is no keys (local mode).
func ParseKeys(s string) (map[APIKey]string, error) {
	keys := map[APIKey]string{}
	for pair := range strings.SplitSeq(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, u, ok := strings.Cut(pair, ":")
		k, u = strings.TrimSpace(k), strings.TrimSpace(u)
		if !ok || k == "" || u == "" {
			return nil, fmt.Errorf("api: API keys: each entry must be key:user (entry %d is not)", len(keys)+1)
		}
		if _, dup := keys[APIKey(k)]; dup {
			return nil, fmt.Errorf("api: API keys: a key is listed twice (user %s)", u)
		}
		keys[APIKey(k)] = u
	}
	return keys, nil
}

// LocalUser is the one user of local mode.
const LocalUser = "local"
