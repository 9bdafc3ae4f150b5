package events

import (
	"encoding/json"
	"time"
)

// RunStarted is run.started, the first event of every run.
type RunStarted struct {
	RequestID string `json:"request_id"`
}

// NodeStart is node.start.
type NodeStart struct {
	Node string `json:"node"`
}

// NodeEnd is node.end. Reasoning is the whole of the node's model
// reasoning, the text its reasoning.chunk events carried (an addition to
// API.md); empty when its model did not reason.
type NodeEnd struct {
	Node       string `json:"node"`
	DurationMS int64  `json:"duration_ms"`
	Reasoning  string `json:"reasoning,omitempty"`
}

// SupervisorThinking is supervisor.thinking: the supervisor begins
// deciding. Message is a fixed status line; the model's own thinking,
// when it reasons, comes as reasoning.chunk events of the supervisor
// node.
type SupervisorThinking struct {
	Message string `json:"message"`
}

// SupervisorDecided is supervisor.decided. Action is lower case: answer,
// call_tool, create_workflow or clarify (blocked when the supervisor gave
// up).
type SupervisorDecided struct {
	Action    string   `json:"action"`
	Tools     []string `json:"tools"`
	Reasoning string   `json:"reasoning"`
}

// ToolStart is tool.start. Source is local, operator or mcp; "" for a tool
// no source offers.
type ToolStart struct {
	ToolCallID string          `json:"tool_call_id"`
	Tool       string          `json:"tool"`
	Source     string          `json:"source"`
	Args       json.RawMessage `json:"args"`
}

// ToolProgress is tool.progress.
type ToolProgress struct {
	ToolCallID string  `json:"tool_call_id"`
	Progress   float64 `json:"progress"`
	Total      float64 `json:"total"`
	Message    string  `json:"message"`
}

// ToolComplete is tool.complete; Result is the result as the model reads
// it. Truncated says the result was larger than the provider's cap and was
// cut (Result ends with a note saying how much).
type ToolComplete struct {
	ToolCallID string `json:"tool_call_id"`
	Tool       string `json:"tool"`
	Result     string `json:"result"`
	DurationMS int64  `json:"duration_ms"`
	Truncated  bool   `json:"truncated,omitempty"`
}

// ToolError is tool.error: the call failed, was rejected or was
// skipped; the model reads Error as the call's result. Truncated as in
// [ToolComplete].
type ToolError struct {
	ToolCallID string `json:"tool_call_id"`
	Tool       string `json:"tool"`
	Error      string `json:"error"`
	Truncated  bool   `json:"truncated,omitempty"`
}

// ToolUncertain is tool.uncertain: the call ToolCallID of Tool, which is
// neither read-only nor idempotent, was started before a crash and never
// recorded an end; it may have run. The run parks until a person answers
// UncertainCallID (the call's idempotency key): run it again, skip it, or
// treat it as failed.
type ToolUncertain struct {
	UncertainCallID string          `json:"uncertain_call_id"`
	ToolCallID      string          `json:"tool_call_id"`
	Tool            string          `json:"tool"`
	Args            json.RawMessage `json:"args"`
	// ExpiresAt is the decision's deadline, with OnExpiry (skip or
	// fail) what happens then; nil when it waits for ever. The run
	// service sets them as it records the request, before the event is
	// sent.
	ExpiresAt *time.Time    `json:"expires_at,omitempty"`
	OnExpiry  ExpiryOutcome `json:"on_expiry,omitempty"`
}

// UncertainCallExpired is uncertain_call.expired: nobody decided on the
// uncertain call UncertainCallID (a human request of Kind,
// "uncertain_call") before ExpiresAt, and Outcome (skip or fail) was
// applied. It comes first in what follows, before
// uncertain_call.resolved.
type UncertainCallExpired struct {
	UncertainCallID string        `json:"uncertain_call_id"`
	Kind            PendingKind   `json:"kind"`
	Outcome         ExpiryOutcome `json:"outcome"`
	ExpiresAt       time.Time     `json:"expires_at"`
}

// ClarificationExpired is clarification.expired: nobody answered the
// clarifying question ClarificationID (a human request of Kind,
// "clarification") before ExpiresAt, and Outcome was applied. It comes
// first in what follows: before the agent goes on without an answer
// (continue), or before run.cancelled (cancel).
type ClarificationExpired struct {
	ClarificationID string        `json:"clarification_id"`
	Kind            PendingKind   `json:"kind"`
	Outcome         ExpiryOutcome `json:"outcome"`
	ExpiresAt       time.Time     `json:"expires_at"`
}

// UncertainCallResolved is uncertain_call.resolved: a person decided
// on the uncertain call UncertainCallID, the call ToolCallID, and the
// run goes on. Decision is retry, skip or fail.
type UncertainCallResolved struct {
	UncertainCallID string `json:"uncertain_call_id"`
	ToolCallID      string `json:"tool_call_id"`
	Decision        string `json:"decision"`
}

// ApprovalRequired is approval.required. ApprovalID is what the service
// passes back in ApprovalDecision; Revision counts the rejected proposals
// before this one in the turn.
type ApprovalRequired struct {
	ApprovalID string          `json:"approval_id"`
	ToolCallID string          `json:"tool_call_id"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Revision   int             `json:"revision"`
	// Diff is what the call would change, as a unified diff, when its
	// tool can show it (a workspace file tool); "" otherwise.
	Diff string `json:"diff,omitempty"`
	// ExpiresAt is the approval's deadline, with OnExpiry what happens
	// then; nil when it waits for ever. The run service sets them as it
	// records the approval, before the event is sent.
	ExpiresAt *time.Time    `json:"expires_at,omitempty"`
	OnExpiry  ExpiryOutcome `json:"on_expiry,omitempty"`
}

// ApprovalResolved is approval.resolved; Args are the edited arguments of
// an edit, else the proposed ones.
type ApprovalResolved struct {
	ApprovalID string          `json:"approval_id"`
	Decision   DecisionKind    `json:"decision"`
	Args       json.RawMessage `json:"args"`
	Reason     string          `json:"reason"`
}

// ApprovalExpired is approval.expired: nobody answered the approval
// ApprovalID (a human request of Kind, "approval") before ExpiresAt, and
// Outcome was applied. It comes first in what follows: before
// approval.resolved of an approve or reject, before run.cancelled of a
// cancel.
type ApprovalExpired struct {
	ApprovalID string        `json:"approval_id"`
	Kind       PendingKind   `json:"kind"`
	Outcome    ExpiryOutcome `json:"outcome"`
	ExpiresAt  time.Time     `json:"expires_at"`
}

// ElicitationRequest is elicitation.request.
type ElicitationRequest struct {
	ElicitationID string          `json:"elicitation_id"`
	Source        string          `json:"source"`
	Message       string          `json:"message"`
	Schema        json.RawMessage `json:"schema"`
	// ExpiresAt is the elicitation's deadline, with OnExpiry what
	// happens then; nil when it waits for ever. The run service sets
	// them as it records the elicitation, before the event is sent.
	ExpiresAt *time.Time    `json:"expires_at,omitempty"`
	OnExpiry  ExpiryOutcome `json:"on_expiry,omitempty"`
}

// ElicitationExpired is elicitation.expired: nobody answered the
// elicitation ElicitationID (a human request of Kind, "elicitation")
// before ExpiresAt, and Outcome was applied. It comes first in what
// follows: before elicitation.response of a decline, before
// run.cancelled of a cancel.
type ElicitationExpired struct {
	ElicitationID string        `json:"elicitation_id"`
	Kind          PendingKind   `json:"kind"`
	Outcome       ExpiryOutcome `json:"outcome"`
	ExpiresAt     time.Time     `json:"expires_at"`
}

// ElicitationResponse is elicitation.response.
type ElicitationResponse struct {
	ElicitationID string `json:"elicitation_id"`
	Action        string `json:"action"`
}

// DirectResponse is direct.response. ToolCallID is an addition to
// API.md's fields: the call that sent the content.
type DirectResponse struct {
	Content     string `json:"content"`
	ContentType string `json:"content_type"`
	WidgetType  string `json:"widget_type"`
	ToolCallID  string `json:"tool_call_id,omitempty"`
}

// ResponseChunk is response.chunk.
type ResponseChunk struct {
	Content string `json:"content"`
}

// ReasoningChunk is reasoning.chunk: a piece of the model's reasoning in
// Node (supervisor, reflect or write), as the model produces it. Only a
// model configured to think (llm.ModelConfig.Thinking) sends any; the
// chunks of one node's call, joined, are its node.end Reasoning.
type ReasoningChunk struct {
	Node    string `json:"node"`
	Content string `json:"content"`
}

// ResponseDone is response.done. Usage is the run's (every model call
// since the run started or resumed, its sub-agents' included). Budget is
// the run's use of its budget, when it has one (an addition to API.md).
type ResponseDone struct {
	Content   string       `json:"content"`
	Citations []Citation   `json:"citations"`
	Usage     Usage        `json:"usage"`
	Budget    *BudgetUsage `json:"budget,omitempty"`
}

// ModelFallback is model.fallback: the model call on From failed for
// Reason (FallbackUnavailable, FallbackRateLimited or FallbackTimeout)
// after its own retries, and is made again on To, the next of From's
// fallbacks (model ids, as the registry names them). The call's usage
// is To's, if it answers.
type ModelFallback struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// Reasons of a model.fallback.
const (
	// FallbackUnavailable: the model's provider failed (5xx, overloaded,
	// a lost connection) or its circuit breaker is open.
	FallbackUnavailable = "unavailable"
	// FallbackRateLimited: the provider answered 429 beyond what the
	// model's retries could wait for.
	FallbackRateLimited = "rate_limited"
	// FallbackTimeout: the call ran out of its timeout.
	FallbackTimeout = "timeout"
)

// SubagentStatus is how a sub-agent's work ended.
type SubagentStatus string

const (
	SubagentCompleted SubagentStatus = "completed"
	SubagentFailed    SubagentStatus = "failed"
	SubagentCancelled SubagentStatus = "cancelled"
	// SubagentBlocked: it ended through its handle_blocked (it could not
	// do the job, or the run's budget ran out); Result says why.
	SubagentBlocked SubagentStatus = "blocked"
)

// SubagentStart is subagent.start: the agent delegated Task to the
// sub-agent named Subagent, at path Namespace ("<name>:<call id>",
// nested ones joined with "/"), whose events carry Namespace as their
// "namespace" field.
type SubagentStart struct {
	Subagent  string `json:"subagent"`
	Task      string `json:"task"`
	Namespace string `json:"namespace"`
}

// SubagentEnd is subagent.end: the sub-agent Subagent at Namespace
// finished, its answer (or what went wrong) in Result.
type SubagentEnd struct {
	Subagent  string         `json:"subagent"`
	Namespace string         `json:"namespace"`
	Status    SubagentStatus `json:"status"`
	Result    string         `json:"result"`
}

// RunCompleted is run.completed, the last event of a run that finished.
type RunCompleted struct {
	Status string `json:"status"`
	Usage  Usage  `json:"usage"`
}

// RunInterrupted is run.interrupted, the last event of a run parked at an
// approval or a clarifying question. Reason is approval or
// clarification; the ids of what waits are in ApprovalIDs or
// ClarificationID, and every pending item in Pending.
type RunInterrupted struct {
	Reason          string   `json:"reason"`
	ApprovalIDs     []string `json:"approval_ids,omitempty"`
	ClarificationID string   `json:"clarification_id,omitempty"`
	Question        string   `json:"question,omitempty"`
	ElicitationIDs  []string `json:"elicitation_ids,omitempty"`
	// UncertainCallIDs name the calls that may have run (reason
	// uncertain_call).
	UncertainCallIDs []string  `json:"uncertain_call_ids,omitempty"`
	Pending          []Pending `json:"pending"`
}

// RunCancelled is run.cancelled, the last event of a run whose context
// ended.
type RunCancelled struct{}

// RunFailed is run.failed, the last event of a run that failed.
type RunFailed struct {
	Error ErrorInfo `json:"error"`
}

// DocumentStatus is document.status: a document of the conversation is
// now at Status (uploading, chunking, summarizing, ready or error, with
// Error saying why). It belongs to no run, so it carries no seq.
type DocumentStatus struct {
	DocumentID string `json:"document_id"`
	Status     string `json:"status"`
	Error      string `json:"error"`
}

// FileChanged is file.changed: the file at Path of the workspace Scope
// ("conversation", "user" or "project") ScopeID is now at Version, after
// Op ("write", "edit", "restore"; "delete" with Version 0).
type FileChanged struct {
	Scope   string `json:"scope"`
	ScopeID string `json:"scope_id"`
	Path    string `json:"path"`
	Version int    `json:"version"`
	Op      string `json:"op"`
}

// StreamReconnect is stream.reconnect: the stream ends here, before the
// run's terminal event, and the client should reconnect to the
// conversation's stream with Last-Event-ID after RetryMS. It belongs to
// no stored sequence, so it carries no seq.
type StreamReconnect struct {
	RunID string `json:"run_id"`
	// Reason is why the stream ends: ReconnectUnavailable,
	// ReconnectShuttingDown, ReconnectBehind or ReconnectError.
	Reason  string `json:"reason"`
	RetryMS int64  `json:"retry_ms"`
}

// Why a stream asks its client to reconnect (StreamReconnect.Reason).
const (
	// ReconnectUnavailable: the server lost its database; the run goes
	// on once it is back, or on another process.
	ReconnectUnavailable = "unavailable"
	// ReconnectShuttingDown: the server is shutting down; the run goes
	// on when it (or another process) is back.
	ReconnectShuttingDown = "shutting_down"
	// ReconnectBehind: the client read too slowly and fell too far
	// behind the run.
	ReconnectBehind = "behind"
	// ReconnectError: reading the run failed otherwise.
	ReconnectError = "error"
)

// ErrorInfo is run.failed's {code, message}.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (*RunStarted) EventType() string            { return TypeRunStarted }
func (*NodeStart) EventType() string             { return TypeNodeStart }
func (*NodeEnd) EventType() string               { return TypeNodeEnd }
func (*SupervisorThinking) EventType() string    { return TypeSupervisorThinking }
func (*SupervisorDecided) EventType() string     { return TypeSupervisorDecided }
func (*ToolStart) EventType() string             { return TypeToolStart }
func (*ToolProgress) EventType() string          { return TypeToolProgress }
func (*ToolComplete) EventType() string          { return TypeToolComplete }
func (*ToolError) EventType() string             { return TypeToolError }
func (*ToolUncertain) EventType() string         { return TypeToolUncertain }
func (*UncertainCallResolved) EventType() string { return TypeUncertainCallResolved }
func (*UncertainCallExpired) EventType() string  { return TypeUncertainCallExpired }
func (*ClarificationExpired) EventType() string  { return TypeClarificationExpired }
func (*ApprovalRequired) EventType() string      { return TypeApprovalRequired }
func (*ApprovalResolved) EventType() string      { return TypeApprovalResolved }
func (*ApprovalExpired) EventType() string       { return TypeApprovalExpired }
func (*ElicitationRequest) EventType() string    { return TypeElicitationRequest }
func (*ElicitationExpired) EventType() string    { return TypeElicitationExpired }
func (*ElicitationResponse) EventType() string   { return TypeElicitationResponse }
func (*DirectResponse) EventType() string        { return TypeDirectResponse }
func (*ResponseChunk) EventType() string         { return TypeResponseChunk }
func (*ReasoningChunk) EventType() string        { return TypeReasoningChunk }
func (*ResponseDone) EventType() string          { return TypeResponseDone }
func (*RunCompleted) EventType() string          { return TypeRunCompleted }
func (*RunInterrupted) EventType() string        { return TypeRunInterrupted }
func (*RunCancelled) EventType() string          { return TypeRunCancelled }
func (*RunFailed) EventType() string             { return TypeRunFailed }
func (*DocumentStatus) EventType() string        { return TypeDocumentStatus }
func (*SubagentStart) EventType() string         { return TypeSubagentStart }
func (*SubagentEnd) EventType() string           { return TypeSubagentEnd }
func (*StreamReconnect) EventType() string       { return TypeStreamReconnect }
func (*ModelFallback) EventType() string         { return TypeModelFallback }
func (*FileChanged) EventType() string           { return TypeFileChanged }
