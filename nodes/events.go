package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/llm"
)

// Event types, as in API.md.
const (
	EventNodeStart           = "node.start"
	EventNodeEnd             = "node.end"
	EventSupervisorThinking  = "supervisor.thinking"
	EventSupervisorDecided   = "supervisor.decided"
	EventToolStart           = "tool.start"
	EventToolProgress        = "tool.progress"
	EventToolComplete        = "tool.complete"
	EventToolError           = "tool.error"
	EventApprovalRequired    = "approval.required"
	EventApprovalResolved    = "approval.resolved"
	EventElicitationRequest  = "elicitation.request"
	EventElicitationResponse = "elicitation.response"
	EventDirectResponse      = "direct.response"
	EventResponseChunk       = "response.chunk"
	EventResponseDone        = "response.done"
	EventRunCompleted        = "run.completed"
	EventRunInterrupted      = "run.interrupted"
	EventRunCancelled        = "run.cancelled"
	EventRunFailed           = "run.failed"
	// EventSubagentStart and EventSubagentEnd frame a sub-agent's work
	// (an addition to API.md; see the README).
	EventSubagentStart = "subagent.start"
	EventSubagentEnd   = "subagent.end"
	// EventDocumentStatus is not a run's event: the service sends it on
	// a conversation's open stream when a document of the conversation
	// changes status, with no seq and no SSE id (API.md, README).
	EventDocumentStatus = "document.status"
	// EventTasksUpdated is the task board after the agent wrote it
	// (write_todos), whole (README).
	EventTasksUpdated = "tasks.updated"
)

// Event is one agent event. Its JSON is API.md's data object for Type
// without the envelope the service adds (seq, run_id, conversation_id,
// ts): {"type": Type, ...Data's fields}.
//
// Data is the payload struct named after the type: *NodeStart for
// node.start, *ToolComplete for tool.complete, and so on; switch on its
// type or on Type.
//
// Namespace is the path of the sub-agent that emitted the event
// ("researcher:call_1", nested ones joined with "/": see SubAgents); ""
// for the root agent's. It is written as the "namespace" field.
type Event struct {
	Type      string
	Data      Payload
	Namespace string
}

// Payload is an event's data; each event type has its own struct.
type Payload interface {
	// EventType is the API.md type of events carrying this payload.
	EventType() string
}

// newEvent wraps a payload.
func newEvent(p Payload) Event { return Event{Type: p.EventType(), Data: p} }

// MarshalJSON writes {"type": …} followed by the payload's fields.
func (e Event) MarshalJSON() ([]byte, error) {
	body := []byte("{}")
	if e.Data != nil {
		var err error
		if body, err = json.Marshal(e.Data); err != nil {
			return nil, fmt.Errorf("nodes: encode %s event: %w", e.Type, err)
		}
	}
	typ, _ := json.Marshal(e.Type)
	out := make([]byte, 0, len(body)+len(typ)+len(e.Namespace)+28)
	out = append(out, `{"type":`...)
	out = append(out, typ...)
	if e.Namespace != "" && !framesSubagent(e.Data) {
		ns, _ := json.Marshal(e.Namespace)
		out = append(out, `,"namespace":`...)
		out = append(out, ns...)
	}
	if len(body) > 2 {
		out = append(out, ',')
		out = append(out, body[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// framesSubagent reports whether p is subagent.start or subagent.end,
// whose own "namespace" (the sub-agent's path) is the event's: a nested
// sub-agent's frame is emitted inside its parent, whose path it does not
// repeat.
func framesSubagent(p Payload) bool {
	switch p.(type) {
	case *SubagentStart, *SubagentEnd:
		return true
	}
	return false
}

// emit sends a payload to the run's stream. It fails only when the run is
// over, which the node learns from its context soon enough, so callers
// may ignore the error.
//
// The payload goes as it is (a pointer, which an interface holds without
// allocating) and runGraph wraps it in its Event; an Event would be boxed
// on every emit.
func emit(ctx context.Context, p Payload) error {
	return graph.Emit(ctx, p)
}

// NodeStart is node.start.
type NodeStart struct {
	Node string `json:"node"`
}

// NodeEnd is node.end.
type NodeEnd struct {
	Node       string `json:"node"`
	DurationMS int64  `json:"duration_ms"`
}

// SupervisorThinking is supervisor.thinking.
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

// ToolErrorEvent is tool.error: the call failed, was rejected or was
// skipped; the model reads Error as the call's result. Truncated as in
// [ToolComplete].
type ToolErrorEvent struct {
	ToolCallID string `json:"tool_call_id"`
	Tool       string `json:"tool"`
	Error      string `json:"error"`
	Truncated  bool   `json:"truncated,omitempty"`
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
}

// ApprovalResolved is approval.resolved; Args are the edited arguments of
// an edit, else the proposed ones.
type ApprovalResolved struct {
	ApprovalID string          `json:"approval_id"`
	Decision   DecisionKind    `json:"decision"`
	Args       json.RawMessage `json:"args"`
	Reason     string          `json:"reason"`
}

// ElicitationRequest is elicitation.request.
type ElicitationRequest struct {
	ElicitationID string          `json:"elicitation_id"`
	Source        string          `json:"source"`
	Message       string          `json:"message"`
	Schema        json.RawMessage `json:"schema"`
}

// ElicitationResponse is elicitation.response.
type ElicitationResponse struct {
	ElicitationID string `json:"elicitation_id"`
	Action        string `json:"action"`
}

// DirectResponseEvent is direct.response. ToolCallID is an addition to
// API.md's fields: the call that sent the content.
type DirectResponseEvent struct {
	Content     string `json:"content"`
	ContentType string `json:"content_type"`
	WidgetType  string `json:"widget_type"`
	ToolCallID  string `json:"tool_call_id,omitempty"`
}

// ResponseChunk is response.chunk.
type ResponseChunk struct {
	Content string `json:"content"`
}

// ResponseDone is response.done. Usage is the run's (every model call
// since the run started or resumed, its sub-agents' included). Budget is
// the run's use of its budget, when it has one (an addition to API.md).
type ResponseDone struct {
	Content   string         `json:"content"`
	Citations []Citation     `json:"citations"`
	Usage     llm.TokenUsage `json:"usage"`
	Budget    *BudgetUsage   `json:"budget,omitempty"`
}

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
	Status string         `json:"status"`
	Usage  llm.TokenUsage `json:"usage"`
}

// RunInterrupted is run.interrupted, the last event of a run parked at an
// approval or a clarifying question. Reason is approval or
// clarification; the ids of what waits are in ApprovalIDs or
// ClarificationID, and every pending item in Pending.
type RunInterrupted struct {
	Reason          string    `json:"reason"`
	ApprovalIDs     []string  `json:"approval_ids,omitempty"`
	ClarificationID string    `json:"clarification_id,omitempty"`
	Question        string    `json:"question,omitempty"`
	ElicitationIDs  []string  `json:"elicitation_ids,omitempty"`
	Pending         []Pending `json:"pending"`
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

// ErrorInfo is run.failed's {code, message}.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (*NodeStart) EventType() string           { return EventNodeStart }
func (*NodeEnd) EventType() string             { return EventNodeEnd }
func (*SupervisorThinking) EventType() string  { return EventSupervisorThinking }
func (*SupervisorDecided) EventType() string   { return EventSupervisorDecided }
func (*ToolStart) EventType() string           { return EventToolStart }
func (*ToolProgress) EventType() string        { return EventToolProgress }
func (*ToolComplete) EventType() string        { return EventToolComplete }
func (*ToolErrorEvent) EventType() string      { return EventToolError }
func (*ApprovalRequired) EventType() string    { return EventApprovalRequired }
func (*ApprovalResolved) EventType() string    { return EventApprovalResolved }
func (*ElicitationRequest) EventType() string  { return EventElicitationRequest }
func (*ElicitationResponse) EventType() string { return EventElicitationResponse }
func (*DirectResponseEvent) EventType() string { return EventDirectResponse }
func (*ResponseChunk) EventType() string       { return EventResponseChunk }
func (*ResponseDone) EventType() string        { return EventResponseDone }
func (*RunCompleted) EventType() string        { return EventRunCompleted }
func (*RunInterrupted) EventType() string      { return EventRunInterrupted }
func (*RunCancelled) EventType() string        { return EventRunCancelled }
func (*RunFailed) EventType() string           { return EventRunFailed }
func (*DocumentStatus) EventType() string      { return EventDocumentStatus }
func (*SubagentStart) EventType() string       { return EventSubagentStart }
func (*SubagentEnd) EventType() string         { return EventSubagentEnd }

// payloads makes an empty payload for each event type, for DecodeEvent.
var payloads = map[string]func() Payload{
	EventNodeStart:           func() Payload { return new(NodeStart) },
	EventNodeEnd:             func() Payload { return new(NodeEnd) },
	EventSupervisorThinking:  func() Payload { return new(SupervisorThinking) },
	EventSupervisorDecided:   func() Payload { return new(SupervisorDecided) },
	EventToolStart:           func() Payload { return new(ToolStart) },
	EventToolProgress:        func() Payload { return new(ToolProgress) },
	EventToolComplete:        func() Payload { return new(ToolComplete) },
	EventToolError:           func() Payload { return new(ToolErrorEvent) },
	EventApprovalRequired:    func() Payload { return new(ApprovalRequired) },
	EventApprovalResolved:    func() Payload { return new(ApprovalResolved) },
	EventElicitationRequest:  func() Payload { return new(ElicitationRequest) },
	EventElicitationResponse: func() Payload { return new(ElicitationResponse) },
	EventDirectResponse:      func() Payload { return new(DirectResponseEvent) },
	EventResponseChunk:       func() Payload { return new(ResponseChunk) },
	EventResponseDone:        func() Payload { return new(ResponseDone) },
	EventRunCompleted:        func() Payload { return new(RunCompleted) },
	EventRunInterrupted:      func() Payload { return new(RunInterrupted) },
	EventRunCancelled:        func() Payload { return new(RunCancelled) },
	EventRunFailed:           func() Payload { return new(RunFailed) },
	EventDocumentStatus:      func() Payload { return new(DocumentStatus) },
	EventSubagentStart:       func() Payload { return new(SubagentStart) },
	EventSubagentEnd:         func() Payload { return new(SubagentEnd) },
	EventTasksUpdated:        func() Payload { return new(TasksUpdated) },
}

// ErrUnknownEvent: DecodeEvent was given a type the vocabulary lacks.
var ErrUnknownEvent = errors.New("nodes: unknown event type")

// DecodeEvent decodes an event's JSON data back into the payload of its
// type, as one read back from a store: the payload's fields, any others
// (an envelope's, say) ignored. It is the one decoder of the
// vocabulary. An unknown type is ErrUnknownEvent; data that does not
// decode returns the payload as far as it was decoded, with the error.
func DecodeEvent(typ string, data []byte) (Payload, error) {
	mk, ok := payloads[typ]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownEvent, typ)
	}
	p := mk()
	if err := json.Unmarshal(data, p); err != nil {
		return p, fmt.Errorf("nodes: decode %s event: %w", typ, err)
	}
	return p, nil
}

// Terminal reports whether events of type typ end a run's segment:
// run.completed, run.interrupted, run.cancelled and run.failed. Exactly
// one ends each.
func Terminal(typ string) bool {
	switch typ {
	case EventRunCompleted, EventRunInterrupted, EventRunCancelled, EventRunFailed:
		return true
	}
	return false
}
