package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DecisionKind is a human's answer to an approval request.
type DecisionKind string

const (
	DecisionApprove DecisionKind = "approve"
	DecisionEdit    DecisionKind = "edit"
	DecisionReject  DecisionKind = "reject"
)

// ElicitAction is how a person answered a tool's question (an MCP
// elicitation): accept, with the content asked for, decline or cancel.
type ElicitAction string

const (
	ElicitAccept  ElicitAction = "accept"
	ElicitDecline ElicitAction = "decline"
	ElicitCancel  ElicitAction = "cancel"
)

// CallDecision is a person's answer to an uncertain call: a call that
// was started and not seen to end, so may have run.
type CallDecision string

const (
	// CallRetry runs the call again, with the same idempotency key.
	CallRetry CallDecision = "retry"
	// CallSkip does not run it; the model is told it was skipped.
	CallSkip CallDecision = "skip"
	// CallFail does not run it; the model is told it failed.
	CallFail CallDecision = "fail"
)

// ExpiryOutcome is what happens to a human request nobody answered by
// its deadline: the operator's choice, per rule or for the server. Each
// kind takes its own outcomes (see ParseExpiryOutcome).
type ExpiryOutcome string

const (
	// ExpiryReject rejects an approval's call: the agent is told that
	// the approval expired unanswered, and goes on without it.
	ExpiryReject ExpiryOutcome = "reject"
	// ExpiryApprove approves an approval's call as it was proposed.
	ExpiryApprove ExpiryOutcome = "approve"
	// ExpiryDecline declines an elicitation, as MCP defines a decline:
	// the tool hears that the user would not answer, and goes on.
	ExpiryDecline ExpiryOutcome = "decline"
	// ExpiryContinue goes on without a clarifying question's answer:
	// the agent is told the user did not answer in time, and proceeds
	// on its best judgement, saying so.
	ExpiryContinue ExpiryOutcome = "continue"
	// ExpirySkip skips an uncertain call: it is treated as not run, and
	// the agent is told it was skipped.
	ExpirySkip ExpiryOutcome = "skip"
	// ExpiryFail treats an uncertain call as failed.
	ExpiryFail ExpiryOutcome = "fail"
	// ExpiryCancel cancels the run, of every kind but an uncertain call.
	ExpiryCancel ExpiryOutcome = "cancel"
)

// ErrExpiryOutcome: ParseExpiryOutcome was given a word that is no
// outcome of the kind.
var ErrExpiryOutcome = errors.New("events: not an expiry outcome")

// ExpiryOutcomes are the outcomes a request of kind may take at its
// deadline, the default first; none for a kind that takes no deadline.
func ExpiryOutcomes(kind PendingKind) []ExpiryOutcome {
	switch kind {
	case PendingApproval:
		return []ExpiryOutcome{ExpiryReject, ExpiryApprove, ExpiryCancel}
	case PendingElicitation:
		return []ExpiryOutcome{ExpiryDecline, ExpiryCancel}
	case PendingClarification:
		return []ExpiryOutcome{ExpiryContinue, ExpiryCancel}
	case PendingUncertainCall:
		// Never retry: running again a call that may have run is what
		// only a person may decide.
		return []ExpiryOutcome{ExpirySkip, ExpiryFail}
	}
	return nil
}

// ParseExpiryOutcome reads an outcome of a request of kind as
// configured; "" is the kind's default, the outcome that neither acts
// nor drops the user's turn (reject for an approval, decline for an
// elicitation, continue for a clarification, skip for an uncertain
// call). Retry (or run) of an uncertain call is refused with a reason
// of its own.
func ParseExpiryOutcome(kind PendingKind, s string) (ExpiryOutcome, error) {
	outcomes := ExpiryOutcomes(kind)
	if len(outcomes) == 0 {
		return "", fmt.Errorf("%w: a %s takes no deadline", ErrExpiryOutcome, kind)
	}
	if s == "" {
		return outcomes[0], nil
	}
	if o := ExpiryOutcome(s); slices.Contains(outcomes, o) {
		return o, nil
	}
	if kind == PendingUncertainCall && (s == "retry" || s == "run") {
		return "", fmt.Errorf("%w: an uncertain call is never run again at its deadline, only by a person's decision: %q is refused (skip or fail)",
			ErrExpiryOutcome, s)
	}
	words := make([]string, len(outcomes))
	for i, o := range outcomes {
		words[i] = string(o)
	}
	return "", fmt.Errorf("%w: a %s's is %s, not %q", ErrExpiryOutcome, kind, strings.Join(words, ", "), s)
}

// PendingKind says what a person is asked, and so what a parked run
// waits for: the kind of a human request in the record, and an
// interrupted run's reason.
type PendingKind string

const (
	// PendingApproval: may a tool call run (approve, edit or reject)?
	PendingApproval PendingKind = "approval"
	// PendingClarification: the agent asks the user a clarifying
	// question. The user's next message on the conversation answers it.
	PendingClarification PendingKind = "clarification"
	// PendingElicitation: a tool asks the user for input (an MCP
	// elicitation). One nobody answered while the run could wait parks
	// the run, its call ended.
	PendingElicitation PendingKind = "elicitation"
	// PendingUncertainCall: a run recovered after a crash found a call
	// of a tool that is neither read-only nor idempotent started and not
	// ended; it may have run. A person decides (see ToolUncertain); the
	// request's id is the call's idempotency key.
	PendingUncertainCall PendingKind = "uncertain_call"
)

// Valid reports whether k is one of the four kinds.
func (k PendingKind) Valid() bool {
	switch k {
	case PendingApproval, PendingClarification, PendingElicitation, PendingUncertainCall:
		return true
	}
	return false
}

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
	// Diff is what the call to approve would change (see
	// ApprovalRequired).
	Diff string `json:"diff,omitempty"`
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
	// ExpiresAt and OnExpiry are the request's deadline and what
	// happens then (see ApprovalRequired); the run service fills them
	// in run.interrupted.
	ExpiresAt *time.Time    `json:"expires_at,omitempty"`
	OnExpiry  ExpiryOutcome `json:"on_expiry,omitempty"`
}
