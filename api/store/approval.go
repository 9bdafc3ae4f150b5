package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// ApprovalStatus is where an approval is in its life.
type ApprovalStatus string

// Approval statuses; all but pending are final.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalEdited   ApprovalStatus = "edited"
	ApprovalRejected ApprovalStatus = "rejected"
	// ApprovalExpired: the run ended, or was superseded, before anyone
	// answered.
	ApprovalExpired ApprovalStatus = "expired"
)

// Decision is a human's answer to an approval.
type Decision string

// Decisions, as POST /approvals/{id} takes them.
const (
	DecisionApprove Decision = "approve"
	DecisionEdit    Decision = "edit"
	DecisionReject  Decision = "reject"
)

// Approval is a tool call waiting for a human's yes. Its JSON is an item
// of GET /approvals/pending, named as approval.required names them.
type Approval struct {
	ID             string          `json:"approval_id"`
	ConversationID string          `json:"conversation_id"`
	RunID          string          `json:"run_id"`
	UserID         string          `json:"-"`
	ToolCallID     string          `json:"tool_call_id"`
	Tool           string          `json:"tool"`
	Args           json.RawMessage `json:"args"` // as proposed
	Revision       int             `json:"revision"`
	Status         ApprovalStatus  `json:"status"`
	Decision       Decision        `json:"decision,omitempty"`
	// EditedArgs are the arguments an edit decided on.
	EditedArgs json.RawMessage `json:"edited_args,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	ResolvedAt *time.Time      `json:"resolved_at,omitempty"`
}

// NewApproval is what CreateApproval needs.
type NewApproval struct {
	ID         string // "" for a fresh one
	RunID      string // required
	ToolCallID string
	Tool       string          // required
	Args       json.RawMessage // a JSON object; nil means {}
	Revision   int
}

// Validate reports an ErrInvalid error for an approval that cannot be
// stored.
func (a NewApproval) Validate() error {
	switch {
	case a.RunID == "":
		return fmt.Errorf("%w: run id is required", ErrInvalid)
	case a.Tool == "":
		return fmt.Errorf("%w: tool is required", ErrInvalid)
	case a.Args != nil && !isObject(a.Args):
		return fmt.Errorf("%w: args of %s are not a JSON object", ErrInvalid, a.Tool)
	case a.Revision < 0:
		return fmt.Errorf("%w: revision %d is negative", ErrInvalid, a.Revision)
	}
	return checkText("approval id", a.ID, "tool call id", a.ToolCallID, "tool", a.Tool)
}

// ApprovalAnswer is a human's decision on an approval.
type ApprovalAnswer struct {
	Decision Decision
	// Args are the edited arguments, a JSON object; required with edit
	// and ignored otherwise.
	Args   json.RawMessage
	Reason string
}

// Validate reports an ErrInvalid error for an answer that cannot be
// recorded.
func (a ApprovalAnswer) Validate() error {
	switch a.Decision {
	case DecisionApprove, DecisionReject:
		return checkText("reason", a.Reason)
	case DecisionEdit:
		if !isObject(a.Args) {
			return fmt.Errorf("%w: an edit needs its args as a JSON object", ErrInvalid)
		}
		return checkText("reason", a.Reason)
	}
	return fmt.Errorf("%w: decision %q is not approve, edit or reject", ErrInvalid, a.Decision)
}

// Status is the status an approval answered so takes.
func (a ApprovalAnswer) Status() ApprovalStatus {
	switch a.Decision {
	case DecisionApprove:
		return ApprovalApproved
	case DecisionEdit:
		return ApprovalEdited
	case DecisionReject:
		return ApprovalRejected
	}
	return ""
}
