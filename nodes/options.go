package nodes

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/operators"
)

// Options configure an Agent. The zero value works; each field states its
// default.
type Options struct {
	// SupervisorModel and ReflectModel name the models (id or alias) that
	// decide and judge; "" means the model the run asked for (Input.Model,
	// else the registry's default). The write node always uses the run's
	// model.
	SupervisorModel string
	ReflectModel    string
	// MaxIterations caps the supervisor's decisions per turn; the turn then
	// ends in handle_blocked. 0 means 5.
	MaxIterations int
	// MaxRevisions is how many rejected tool calls a turn tolerates: after
	// that many rejections the agent stops proposing and says so. 0 means 3.
	MaxRevisions int
	// MaxParallelTools bounds the tool calls one execution runs at once.
	// 0 means 8.
	MaxParallelTools int
	// Window bounds what models see of the conversation.
	Window Window
	// SystemPrompt opens every model call; "" means DefaultSystemPrompt.
	SystemPrompt string
	// Hooks are called as turns end; nil fields are skipped.
	Hooks Hooks
	// Elicitor answers tools that ask the user for input while they run;
	// nil declines every such request with operators.ErrNoUser.
	Elicitor Elicitor
	// Calls records the calls of tools that are neither read-only nor
	// idempotent before they start and when they end, so that a call a
	// crash cut short is never started again on its own (see CallLog);
	// nil records nothing.
	Calls CallLog
	// Cognition loads the user's cognitive context (profile, memories) for
	// the supervisor; nil loads none. It is given ContextTimeout.
	Cognition func(ctx context.Context, userID, query string) (string, error)
	// MemoryTools names the tools that read or write the user's memory.
	// A turn with Input.NoMemory is not offered them, and a call of one
	// (a model may name a tool it was not offered) fails without running.
	// None by default.
	MemoryTools []string
	// Documents loads summaries of the conversation's documents for the
	// supervisor; nil loads none. It is given ContextTimeout.
	Documents DocumentSource
	// ContextTimeout bounds Cognition and Documents; on timeout or error
	// the turn goes on without them. 0 means 100 ms.
	ContextTimeout time.Duration
	// StreamBuffer is how many events nodes may emit ahead of a slow
	// consumer before they wait; 0 means 16. (The engine's buffer holds
	// whole graph events, about 1 KB each with ChatState, allocated per
	// run.)
	StreamBuffer int
	// Durability says when a turn writes its checkpoints (see
	// graph.Durability); the zero value is graph.DurabilitySync, each
	// step's before the next starts. In graph.DurabilityAsync they are
	// written while the next steps run, and a turn that ends has written
	// them all. In graph.DurabilityExit a turn
	// writes its input's and its last, so a turn cut by a crash is
	// continued from its start (its model calls and tools run again).
	// graph.DurabilityBoundary writes those and the checkpoints holding
	// the calls of an execute_tool step that calls a tool neither
	// read-only nor idempotent (before they start), the tools' results
	// and the answer (before it is recorded): a crash repeats model
	// calls and read-only or idempotent tools cut by it, never another
	// (with Calls, a call cut by the crash is put to a person).
	Durability graph.Durability
	// Middleware extends the agent (see Middleware). The agent puts its
	// built-ins first — the window (always), documents (with Documents),
	// cognition (with Cognition), sub-agents (with SubAgents.Agents) —
	// then these, in order.
	Middleware []Middleware
	// SubAgents are the agents the supervisor may delegate to (see
	// SubAgents); none by default.
	SubAgents SubAgents
	// Budget limits every run (see Budget); a request may tighten it
	// (Input.Budget). The zero value limits nothing.
	Budget events.Budget
	// Logger receives hook and loader failures; nil discards.
	Logger *slog.Logger
	// Tracer, when set, puts each node and each tool call in an
	// OpenTelemetry span (GenAI conventions for tools), children of the
	// span in the run's context; nil: no spans and no wrapper, so tracing
	// off costs nothing per node.
	Tracer trace.Tracer
}

func (o *Options) maxIterations() int    { return positive(o.MaxIterations, 5) }
func (o *Options) maxRevisions() int     { return positive(o.MaxRevisions, 3) }
func (o *Options) maxParallelTools() int { return positive(o.MaxParallelTools, 8) }
func (o *Options) streamBuffer() int     { return positive(o.StreamBuffer, 16) }
func (o *Options) contextTimeout() time.Duration {
	if o.ContextTimeout > 0 {
		return o.ContextTimeout
	}
	return 100 * time.Millisecond
}

func positive(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// DocumentSource is what the agent reads of a conversation's documents
// before the supervisor decides; the service implements it over its
// document store.
type DocumentSource interface {
	// DocumentSummaries describes the user's documents in the
	// conversation, oldest first: only those of documentIDs when it is
	// not empty. A conversation with none has none (no error).
	DocumentSummaries(ctx context.Context, userID, conversationID string, documentIDs []string) ([]DataSummary, error)
}

// DocumentSourceFunc is a function as a DocumentSource.
type DocumentSourceFunc func(ctx context.Context, userID, conversationID string, documentIDs []string) ([]DataSummary, error)

// DocumentSummaries calls f.
func (f DocumentSourceFunc) DocumentSummaries(ctx context.Context, userID, conversationID string, documentIDs []string) ([]DataSummary, error) {
	return f(ctx, userID, conversationID, documentIDs)
}

// Hooks let the service store and learn from what the agent says. They run
// inside the stream node, once per answer the user sees (a clarifying
// question included); after a crash the node may run again, so they must
// tolerate a repeat (key on Answer.RequestID and Answer.Outcome).
type Hooks struct {
	// OnAnswer persists the assistant's message no later than the
	// response.done that shows it, which comes next (the run service
	// stores both in one transaction). An error fails the stream node,
	// so that no answer is shown and then lost; a run continued from the
	// node's checkpoint, or from the end of its turn (Continue), calls
	// it again.
	OnAnswer func(ctx context.Context, a Answer) error
	// Learn enqueues background learning from the turn. It must not block.
	Learn func(ctx context.Context, a Answer)
}

// Answer is what the hooks receive.
type Answer struct {
	ConversationID string
	UserID         string
	RequestID      string
	Query          string
	Message        Message
	Outcome        Outcome
	Citations      []events.Citation
	// Usage is the turn's usage so far.
	Usage       events.Usage
	ToolResults []ToolResult
	// NoMemory: the request keeps the turn out of memory (Input.NoMemory).
	NoMemory bool
}

// Elicitor asks the user for input on a running tool's behalf. The service
// implements it: it registers the request (req.ElicitationID is set), lets
// POST /elicitation/respond answer it, and returns the answer, or an error
// when ctx ends first. The agent emits elicitation.request before calling
// it and elicitation.response after.
type Elicitor interface {
	Elicit(ctx context.Context, conversationID string, req operators.ElicitRequest) (operators.ElicitResponse, error)
}
