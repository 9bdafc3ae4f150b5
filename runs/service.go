package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
)

// Errors the service answers with; a caller maps them to its protocol's
// statuses (api: API.md's codes).
var (
	// ErrShuttingDown: the service is stopping and takes no new runs.
	ErrShuttingDown = errors.New("runs: the service is shutting down")
	// ErrUnavailable: this process lost its database session (or the
	// database went away) and is reconnecting; retry in a moment.
	ErrUnavailable = errors.New("runs: the database connection was lost; reconnecting")
	// ErrTooManyRuns: the user has Config.MaxRunsPerUser runs live here.
	ErrTooManyRuns = errors.New("runs: too many runs going at once")
	// ErrNothingToRun: no run of the conversation is running or waiting.
	ErrNothingToRun = errors.New("runs: no run is running or waiting on this conversation")
	// ErrRunCancelling: an answer to an approval whose run the user has
	// just cancelled; the cancel won.
	ErrRunCancelling = errors.New("runs: the run was cancelled; this approval is no longer asked")
	// ErrBusy: the run has too many answers waiting to take another now.
	ErrBusy = errors.New("runs: the run has too many answers waiting")
)

// DefaultMaxMessageRunes is Config.MaxMessageRunes' default.
const DefaultMaxMessageRunes = 32000

// MessageTooLongError refuses a user's message longer than
// Config.MaxMessageRunes characters. Every surface that takes a message
// gets it from the same verbs (Start, OpenConversation), so the limit is
// the same on each, answered in each protocol's error shape.
type MessageTooLongError struct {
	// Most is the limit, in characters.
	Most int
}

func (e *MessageTooLongError) Error() string {
	return fmt.Sprintf("runs: the message is longer than %d characters", e.Most)
}

// CheckMessage returns a *MessageTooLongError for a message over
// Config.MaxMessageRunes, nil otherwise. Start and OpenConversation
// check for themselves; a surface that does something else with the
// message first (interrupts the thread's run, say) asks here before.
func (m *Service) CheckMessage(msg string) error {
	if most := m.cfg.MaxMessageRunes; most > 0 && utf8.RuneCountInString(msg) > most {
		return &MessageTooLongError{Most: most}
	}
	return nil
}

// MaxContextBytes bounds a request's context object (nodes.Input.Context)
// as compact JSON: it goes into the system prompt of every model call of
// the run, and to every tool call.
const MaxContextBytes = 16 << 10

// ErrContextTooLarge refuses a request whose context object is over
// MaxContextBytes, on every surface that starts runs (Start checks it).
var ErrContextTooLarge = fmt.Errorf("runs: the context object is larger than %d bytes as compact JSON", MaxContextBytes)

// CheckContext returns ErrContextTooLarge for a context object over
// MaxContextBytes as compact JSON, nil otherwise; c must be valid JSON
// (a request's, decoded). Start checks for itself; a surface that stores
// something before it starts the run asks here before.
func CheckContext(c json.RawMessage) error {
	if len(c) <= MaxContextBytes {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, c) != nil || b.Len() > MaxContextBytes {
		return ErrContextTooLarge
	}
	return nil
}

// Why a run's context ends; context.Cause tells them apart.
var (
	errCancelled   = errors.New("runs: the user cancelled the run")
	errShutdown    = errors.New("runs: the server is shutting down")
	errDeleted     = errors.New("runs: the conversation was deleted")
	errRunEnded    = errors.New("runs: the run ended")
	errEventsLost  = errors.New("runs: the run's events could not be stored")
	errStorageLost = errors.New("runs: the database connection was lost")
)

// Config configures a Service. Store and Models are required; every
// other zero field works, as stated.
type Config struct {
	// Store is the service's record.
	Store store.Store
	// Models, Tools and Checkpointer are the agent's (see nodes.New).
	Models       *llm.Registry
	Tools        *operators.Provider
	Checkpointer graph.Checkpointer
	// Agent configures the agent New builds. Its Hooks.OnAnswer,
	// Elicitor and Calls are the service's own: a given OnAnswer is
	// called after the service has stored the answer, a given Elicitor
	// or Calls is ignored.
	Agent nodes.Options
	// ElicitTimeout is how long a tool's question waits for the user
	// while a stream follows its run; 0 means DefaultElicitTimeout.
	ElicitTimeout time.Duration
	// InterruptAfter is how long a run stopped for an approval keeps an
	// open stream waiting for the answer before it is parked; 0 or
	// negative parks at once.
	InterruptAfter time.Duration
	// CancelOnDisconnect cancels a run when the client that started it
	// goes away, for the requests that leave it to the service (see
	// DisconnectDefault).
	CancelOnDisconnect bool
	// MaxRunsPerUser caps a user's runs live in this process
	// (ErrTooManyRuns beyond it); 0 or negative: no cap.
	MaxRunsPerUser int
	// MonthlyTokenQuota caps the tokens a user's runs spend in a UTC
	// month, counted from the usage record (store.UsageLog): a run is
	// refused with a *QuotaError once it is used up, and a run started
	// before gets what is left as its token budget. 0 or negative: no
	// quota.
	MonthlyTokenQuota int64
	// MaxMessageRunes caps a user's message in characters (a
	// *MessageTooLongError beyond it); 0 means DefaultMaxMessageRunes,
	// negative no cap.
	MaxMessageRunes int
	// StreamBuffer is how many events one subscriber may fall behind
	// before it is cut; 0 means 256.
	StreamBuffer int
	// Logger receives the service's logs; nil discards.
	Logger *slog.Logger
	// Owner names this process in the runs it starts. Required with a
	// Cluster.
	Owner string
	// Cluster, with Notices listening as Owner, makes this process one
	// of several sharing Store's database (see Cluster). Nil: this
	// process is alone with the store.
	Cluster Cluster
	Notices Notices
	// ClaimInterval is how often a process of a Cluster looks for runs of
	// processes that are gone; 0 means DefaultClaimInterval.
	ClaimInterval time.Duration
	// Metrics counts runs, usage and tool calls; nil counts nothing.
	Metrics Metrics
	// DeleteFiles, when set, deletes what a conversation keeps outside
	// the record and the agent's state (its documents' files); see
	// DeleteConversation. Nil: there is nothing of the kind.
	DeleteFiles func(ctx context.Context, userID, conversationID string) error
	// Title, when set, is called once a run that gave a conversation its
	// first answer (the agent's first turn) has completed, its terminal
	// event sent: to title the conversation in the background (see
	// TitleConversation). It must not block for long.
	Title func(ctx context.Context, userID, conversationID string)
	// Scrub, when set, is called once a conversation is deleted, to
	// clear what the databases keep of deleted rows (SQLite's write-ahead
	// logs). An error is logged: the conversation is gone either way.
	Scrub func(ctx context.Context) error
	// ScheduleExpiry, when set, arranges durably (a scheduled job) that
	// Expire(kind, userID, id) is called at the deadline at, on
	// whichever process is alive then, once a run has stored an
	// human request with a deadline; called again for the
	// same request it keeps one. It must not block for long. Nil:
	// requests get no deadline, whatever the tools' rules say, since
	// nothing would keep it.
	ScheduleExpiry func(ctx context.Context, kind events.PendingKind, userID, id string, at time.Time) error
	// ClarificationExpiry is the deadline of the agent's clarifying
	// questions, and what happens then (continue or cancel);
	// UncertainCallExpiry that of the decision on a call that may have
	// run (skip or fail). Zero waits for ever, as does either without
	// ScheduleExpiry.
	ClarificationExpiry operators.Expiry
	UncertainCallExpiry operators.Expiry
}

// Metrics is what the service reports as runs go.
type Metrics interface {
	// RunsActive adds delta to the runs live in this process.
	RunsActive(delta int64)
	// RunEnded counts a run segment that ended with status after d.
	RunEnded(status string, d time.Duration)
	// Usage adds a segment's model tokens.
	Usage(u events.Usage)
	// ToolCall counts a tool call, "success" or "error".
	ToolCall(tool, status string)
}

type noMetrics struct{}

func (noMetrics) RunsActive(int64)               {}
func (noMetrics) RunEnded(string, time.Duration) {}
func (noMetrics) Usage(events.Usage)             {}
func (noMetrics) ToolCall(string, string)        {}

// Service owns the life of every run live in this process: it starts
// runs, drives the agent's events through the event pipeline, parks runs
// that wait for a human, resumes them, cancels them, and recovers the
// runs of a process that is gone.
type Service struct {
	st      store.Store
	agent   *nodes.Agent
	asks    *questions // tools' questions waiting for the user here
	cfg     Config
	log     *slog.Logger
	metrics Metrics
	// pageReads holds a slot while a replay reads a page of the store:
	// on SQLite each concurrent read is a connection of its own, whose
	// page cache lives outside the Go heap, so many replays at once
	// would otherwise hold a connection each.
	pageReads chan struct{}

	// gate orders starts before Shutdown: a start holds it for reading
	// from its checks to its goroutine's launch; Shutdown takes it for
	// writing to set draining, and a delete takes it once to wait for
	// the starts and task edits under way (startsBefore).
	gate     sync.RWMutex
	draining atomic.Bool
	wg       sync.WaitGroup // one per driving goroutine

	// resumeMu serialises answering approvals and cancelling runs: two
	// answers to one parked run resume it once, and of an answer and a
	// cancel racing for one waiting run exactly one wins (see
	// answerApproval).
	resumeMu sync.Mutex

	mu     sync.Mutex
	byConv map[string]*Run // live runs by conversation
	hubs   map[string]*hub // by run id
	slots  map[string]int  // live runs per user
	ready  map[string]*readyFlag
	// orphans are the runs whose client went away, waiting for a resume,
	// by conversation; settling counts the starts waiting for a
	// conversation's run to end (see DisconnectAwaitResume).
	orphans  map[string]*orphan
	settling map[string]int

	// lost holds the runs stopped by a lost database (see strand).
	lost stranding
	// sessionGone is when this process of a cluster lost its session
	// (zero while it holds it); guarded by mu.
	sessionGone time.Time

	// life ends when Shutdown has parked the runs: streams that follow
	// parked runs end with it.
	life context.Context
	end  context.CancelFunc
	// bg holds the cluster's goroutines (see startCluster).
	bg sync.WaitGroup
}

// readyFlag is closed once an elicitation is registered in the waiting
// room and can take an answer.
type readyFlag struct {
	ch     chan struct{}
	closed bool
}

// New builds the service and its agent (over cfg's models, tools and
// checkpointer, with the service's answer hook and elicitor), and, with
// a Cluster, starts acting on notices and claiming orphaned runs.
// Shutdown ends it.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.Store == nil || cfg.Models == nil:
		return nil, errors.New("runs: new service: Store and Models are required")
	case cfg.Cluster != nil && (cfg.Notices == nil || cfg.Owner == ""):
		return nil, errors.New("runs: new service: a Cluster needs Notices listening as Owner, and Owner set")
	}
	if cfg.StreamBuffer <= 0 {
		cfg.StreamBuffer = 256
	}
	if cfg.MaxMessageRunes == 0 {
		cfg.MaxMessageRunes = DefaultMaxMessageRunes
	}
	if cfg.ClaimInterval <= 0 {
		cfg.ClaimInterval = DefaultClaimInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	m := &Service{
		st: cfg.Store, asks: newQuestions(cfg.ElicitTimeout, cfg.Logger), cfg: cfg, log: cfg.Logger, metrics: cfg.Metrics,
		pageReads: make(chan struct{}, max(4, runtime.GOMAXPROCS(0))),
		byConv:    map[string]*Run{}, hubs: map[string]*hub{}, slots: map[string]int{}, ready: map[string]*readyFlag{},
		orphans: map[string]*orphan{}, settling: map[string]int{},
	}
	opts := cfg.Agent
	then := opts.Hooks.OnAnswer
	opts.Hooks.OnAnswer = func(ctx context.Context, a nodes.Answer) error {
		if err := m.onAnswer(ctx, a); err != nil {
			return err
		}
		if then != nil {
			return then(ctx, a)
		}
		return nil
	}
	opts.Elicitor = elicitor{m}
	opts.Calls = callLog{m}
	if opts.Logger == nil {
		opts.Logger = cfg.Logger
	}
	agent, err := nodes.New(cfg.Models, cfg.Tools, cfg.Checkpointer, opts)
	if err != nil {
		return nil, fmt.Errorf("runs: new service: %w", err)
	}
	m.agent = agent
	m.life, m.end = context.WithCancel(context.Background())
	m.startCluster()
	return m, nil
}

// Models is the agent's model registry: what a protocol adapter lists
// and checks a request's model against.
func (m *Service) Models() *llm.Registry { return m.cfg.Models }

// Draining reports whether Shutdown has begun: no run starts any more.
func (m *Service) Draining() bool { return m.draining.Load() }

// SessionLostSince reports since when this process of a cluster has been
// without its database session; zero while it holds it, or without a
// Cluster. Its runs stop meanwhile and no new ones start.
func (m *Service) SessionLostSince() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessionGone
}

// Lost reports whether err says the database went away, so that what
// failed may succeed once it is back (see Cluster.Lost); never without a
// Cluster.
func (m *Service) Lost(err error) bool { return m.lostErr(err) }
