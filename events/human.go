package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// DecisionKind is a human's answer to an approval request.
type DecisionKind string

const (
	DecisionApprove DecisionKind = "approve"
	DecisionEdit    DecisionKind = "edit"
	DecisionReject  DecisionKind = "reject"
)

// ExpiryOutcome is what happens to an approval nobody answered by its
// deadline: the operator's choice, per approval rule or for the server.
type ExpiryOutcome string

const (
	// ExpiryReject rejects the call: the agent is told that the approval
	// expired unanswered, and goes on without it.
	ExpiryReject ExpiryOutcome = "reject"
	// ExpiryApprove approves the call as it was proposed.
	ExpiryApprove ExpiryOutcome = "approve"
	// ExpiryCancel cancels the run.
	ExpiryCancel ExpiryOutcome = "cancel"
)

// ErrExpiryOutcome: ParseExpiryOutcome was given another word.
var ErrExpiryOutcome = errors.New("events: an expiry outcome is reject, approve or cancel")

// ParseExpiryOutcome reads an outcome as configured; "" is ExpiryReject,
// the outcome that neither acts nor drops the user's turn.
func ParseExpiryOutcome(s string) (ExpiryOutcome, error) {
	switch o := ExpiryOutcome(s); o {
	case "":
		return ExpiryReject, nil
	case ExpiryReject, ExpiryApprove, ExpiryCancel:
		return o, nil
	}
	return "", fmt.Errorf("%w, not %q", ErrExpiryOutcome, s)
}

// PendingKind says what a parked run waits for.
type PendingKind string

const (
	PendingApproval      PendingKind = "approval"
	PendingClarification PendingKind = "clarification"
	// PendingElicitation: a tool's question nobody answered while the run
	// could wait; the call ended and the run parked (see AnswerElicitation).
	PendingElicitation PendingKind = "elicitation"
	// PendingUncertainCall: a run recovered after a crash found a call
	// that may have run; a person decides (see ToolUncertain).
	PendingUncertainCall PendingKind = "uncertain_call"
)

// Pending is one thing a parked conversation waits for: a tool call's
// approval, or the answer to a clarifying question. It is also the payload
// the agent's interrupts carry.
type Pending struct {
	Kind PendingKind `json:"kind"`
	// ID is the approval_id (or clarification id) to answer.
	ID string `json:"id,omitempty"`
	// ToolCallID, Tool, Args and Revision describe the call to approve.
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	Revision   int             `json:"revision"`
	// Question is the clarifying question.
	Question string `json:"question,omitempty"`
	// ElicitationID, Source, Message and Schema are a tool's question
	// (PendingElicitation), for the call ToolCallID of Tool. Replayable
	// says the call runs again with the answer; otherwise the answer
	// comes too late for it and the model is told so.
	ElicitationID string          `json:"elicitation_id,omitempty"`
	Source        string          `json:"source,omitempty"`
	Message       string          `json:"message,omitempty"`
	Schema        json.RawMessage `json:"schema,omitempty"`
	Replayable    bool            `json:"replayable,omitempty"`
	// UncertainCallID is the idempotency key of a call that may have run
	// (PendingUncertainCall), the call ToolCallID of Tool with Args.
	UncertainCallID string `json:"uncertain_call_id,omitempty"`
	// Namespace is the path of the sub-agent that asks; "" for the
	// root agent.
	Namespace string `json:"namespace,omitempty"`
	// ExpiresAt and OnExpiry are an approval's deadline and what
	// happens then (see ApprovalRequired); the run service fills them
	// in run.interrupted.
	ExpiresAt *time.Time    `json:"expires_at,omitempty"`
	OnExpiry  ExpiryOutcome `json:"on_expiry,omitempty"`
}
