package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Event types, as in API.md.
const (
	// TypeRunStarted is the first event of every run, the run service's:
	// it carries the id of the request that started the run.
	TypeRunStarted         = "run.started"
	TypeNodeStart          = "node.start"
	TypeNodeEnd            = "node.end"
	TypeSupervisorThinking = "supervisor.thinking"
	TypeSupervisorDecided  = "supervisor.decided"
	TypeToolStart          = "tool.start"
	TypeToolProgress       = "tool.progress"
	TypeToolComplete       = "tool.complete"
	TypeToolError          = "tool.error"
	// TypeToolUncertain: a run recovered after a crash found a call that
	// may have run, and asks a person what to do with it (an addition
	// to API.md; see docs/api.md).
	TypeToolUncertain = "tool.uncertain"
	// TypeUncertainCallResolved: a person decided on an uncertain call
	// and the run goes on (an addition to API.md; see docs/api.md).
	TypeUncertainCallResolved = "uncertain_call.resolved"
	// TypeUncertainCallExpired: nobody decided on an uncertain call
	// before its deadline, and the outcome the operator chose for it
	// (skip or fail) was applied (an addition to API.md; see
	// docs/api.md).
	TypeUncertainCallExpired = "uncertain_call.expired"
	// TypeClarificationExpired: nobody answered a clarifying question
	// before its deadline, and the outcome the operator chose for it was
	// applied (an addition to API.md; see docs/api.md).
	TypeClarificationExpired = "clarification.expired"
	TypeApprovalRequired     = "approval.required"
	TypeApprovalResolved     = "approval.resolved"
	// TypeApprovalExpired: nobody answered an approval before its
	// deadline, and the outcome the operator chose for it was applied
	// (an addition to API.md; see docs/api.md).
	TypeApprovalExpired    = "approval.expired"
	TypeElicitationRequest = "elicitation.request"
	// TypeElicitationExpired: nobody answered an elicitation before its
	// deadline, and the outcome the operator chose for it was applied
	// (an addition to API.md; see docs/api.md).
	TypeElicitationExpired  = "elicitation.expired"
	TypeElicitationResponse = "elicitation.response"
	TypeDirectResponse      = "direct.response"
	TypeResponseChunk       = "response.chunk"
	// TypeReasoningChunk is a piece of a node's model reasoning (its
	// thinking), as the model produces it (an addition to API.md; see
	// docs/api.md).
	TypeReasoningChunk = "reasoning.chunk"
	TypeResponseDone   = "response.done"
	TypeRunCompleted   = "run.completed"
	TypeRunInterrupted = "run.interrupted"
	TypeRunCancelled   = "run.cancelled"
	TypeRunFailed      = "run.failed"
	// TypeSubagentStart and TypeSubagentEnd frame a sub-agent's work
	// (an addition to API.md; see the README).
	TypeSubagentStart = "subagent.start"
	TypeSubagentEnd   = "subagent.end"
	// TypeDocumentStatus is not a run's event: the service sends it on
	// a conversation's open stream when a document of the conversation
	// changes status, with no seq and no SSE id (API.md, README).
	TypeDocumentStatus = "document.status"
	// TypeFileChanged: a file of the agent's workspace changed (the
	// agent wrote, edited, restored or deleted it), for a client's view
	// of the files (an addition to API.md; see docs/api.md).
	TypeFileChanged = "file.changed"
	// TypeTasksUpdated is the task board after the agent wrote it
	// (write_todos), whole (README).
	TypeTasksUpdated = "tasks.updated"
	// TypeStreamReconnect is not a run's event either: the last frame of
	// a stream that ends before its run's terminal event, after an SSE
	// retry line, with no seq and no SSE id; the client reconnects with
	// Last-Event-ID (docs/api.md).
	TypeStreamReconnect = "stream.reconnect"
	// TypeModelFallback: a model call failed on a model that names
	// fallbacks, and moves to the next of them (an addition to API.md;
	// see docs/api.md).
	TypeModelFallback = "model.fallback"
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

// New wraps a payload in its event.
func New(p Payload) Event { return Event{Type: p.EventType(), Data: p} }

// MarshalJSON writes {"type": …} followed by the payload's fields.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil) }

// AppendJSON appends the event's JSON, MarshalJSON's, to dst: an
// envelope around it (the run service's) is written with one copy of
// it, not two.
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	body := []byte("{}")
	if e.Data != nil {
		var err error
		if body, err = json.Marshal(e.Data); err != nil {
			return nil, fmt.Errorf("events: encode %s event: %w", e.Type, err)
		}
	}
	dst = slices.Grow(dst, len(body)+len(e.Type)+len(e.Namespace)+28)
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, e.Type)
	if e.Namespace != "" && !framesSubagent(e.Data) {
		dst = append(dst, `,"namespace":`...)
		dst = appendString(dst, e.Namespace)
	}
	if len(body) > 2 {
		dst = append(dst, ',')
		return append(dst, body[1:]...), nil
	}
	return append(dst, '}'), nil
}

// appendString appends s as a JSON string: quoted as it is when it
// needs no escaping, as the types do ("response.chunk"), which spares
// encoding them at every event.
func appendString(dst []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; (c < 'a' || c > 'z') && c != '.' && c != '_' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
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

// payloads makes an empty payload for each event type, for Decode.
var payloads = map[string]func() Payload{
	TypeRunStarted:            func() Payload { return new(RunStarted) },
	TypeNodeStart:             func() Payload { return new(NodeStart) },
	TypeNodeEnd:               func() Payload { return new(NodeEnd) },
	TypeSupervisorThinking:    func() Payload { return new(SupervisorThinking) },
	TypeSupervisorDecided:     func() Payload { return new(SupervisorDecided) },
	TypeToolStart:             func() Payload { return new(ToolStart) },
	TypeToolProgress:          func() Payload { return new(ToolProgress) },
	TypeToolComplete:          func() Payload { return new(ToolComplete) },
	TypeToolError:             func() Payload { return new(ToolError) },
	TypeToolUncertain:         func() Payload { return new(ToolUncertain) },
	TypeUncertainCallResolved: func() Payload { return new(UncertainCallResolved) },
	TypeUncertainCallExpired:  func() Payload { return new(UncertainCallExpired) },
	TypeClarificationExpired:  func() Payload { return new(ClarificationExpired) },
	TypeApprovalRequired:      func() Payload { return new(ApprovalRequired) },
	TypeApprovalResolved:      func() Payload { return new(ApprovalResolved) },
	TypeApprovalExpired:       func() Payload { return new(ApprovalExpired) },
	TypeElicitationRequest:    func() Payload { return new(ElicitationRequest) },
	TypeElicitationExpired:    func() Payload { return new(ElicitationExpired) },
	TypeElicitationResponse:   func() Payload { return new(ElicitationResponse) },
	TypeDirectResponse:        func() Payload { return new(DirectResponse) },
	TypeResponseChunk:         func() Payload { return new(ResponseChunk) },
	TypeReasoningChunk:        func() Payload { return new(ReasoningChunk) },
	TypeResponseDone:          func() Payload { return new(ResponseDone) },
	TypeRunCompleted:          func() Payload { return new(RunCompleted) },
	TypeRunInterrupted:        func() Payload { return new(RunInterrupted) },
	TypeRunCancelled:          func() Payload { return new(RunCancelled) },
	TypeRunFailed:             func() Payload { return new(RunFailed) },
	TypeDocumentStatus:        func() Payload { return new(DocumentStatus) },
	TypeSubagentStart:         func() Payload { return new(SubagentStart) },
	TypeSubagentEnd:           func() Payload { return new(SubagentEnd) },
	TypeTasksUpdated:          func() Payload { return new(TasksUpdated) },
	TypeFileChanged:           func() Payload { return new(FileChanged) },
	TypeStreamReconnect:       func() Payload { return new(StreamReconnect) },
	TypeModelFallback:         func() Payload { return new(ModelFallback) },
}

// ErrUnknown: Decode was given a type the vocabulary lacks.
var ErrUnknown = errors.New("events: unknown event type")

// Decode decodes an event's JSON data back into the payload of its
// type, as one read back from a store: the payload's fields, any others
// (an envelope's, say) ignored. It is the one decoder of the
// vocabulary. An unknown type is ErrUnknown; data that does not
// decode returns the payload as far as it was decoded, with the error.
func Decode(typ string, data []byte) (Payload, error) {
	mk, ok := payloads[typ]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, typ)
	}
	p := mk()
	if err := json.Unmarshal(data, p); err != nil {
		return p, fmt.Errorf("events: decode %s event: %w", typ, err)
	}
	return p, nil
}

// Terminal reports whether events of type typ end a run's segment:
// run.completed, run.interrupted, run.cancelled and run.failed. Exactly
// one ends each.
func Terminal(typ string) bool {
	switch typ {
	case TypeRunCompleted, TypeRunInterrupted, TypeRunCancelled, TypeRunFailed:
		return true
	}
	return false
}
