package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// ElicitationStatus is where an elicitation is in its life.
type ElicitationStatus string

// Elicitation statuses; all but pending are final.
const (
	ElicitationPending   ElicitationStatus = "pending"
	ElicitationAccepted  ElicitationStatus = "accepted"
	ElicitationDeclined  ElicitationStatus = "declined"
	ElicitationCancelled ElicitationStatus = "cancelled"
	// ElicitationExpired: the run ended, or was superseded, before anyone
	// answered.
	ElicitationExpired ElicitationStatus = "expired"
)

// ElicitationAction is the user's answer to an elicitation.
type ElicitationAction string

// Actions, as POST /elicitation/respond takes them.
const (
	ActionAccept  ElicitationAction = "accept"
	ActionDecline ElicitationAction = "decline"
	ActionCancel  ElicitationAction = "cancel"
)

// Elicitation is a tool's request for input from the user. Its JSON is an
// item of GET /elicitation/pending, named as elicitation.request names
// them.
type Elicitation struct {
	ID             string            `json:"elicitation_id"`
	ConversationID string            `json:"conversation_id"`
	RunID          string            `json:"run_id"`
	UserID         string            `json:"-"`
	Source         string            `json:"source"`
	Message        string            `json:"message"`
	Schema         json.RawMessage   `json:"schema"` // JSON Schema of the requested object
	Status         ElicitationStatus `json:"status"`
	// Content is what the user accepted with.
	Content    json.RawMessage `json:"content,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	ResolvedAt *time.Time      `json:"resolved_at,omitempty"`
}

// NewElicitation is what CreateElicitation needs.
type NewElicitation struct {
	ID      string // "" for a fresh one
	RunID   string // required
	Source  string
	Message string
	Schema  json.RawMessage // a JSON object; nil means {}
}

// Validate reports an ErrInvalid error for an elicitation that cannot be
// stored.
func (e NewElicitation) Validate() error {
	switch {
	case e.RunID == "":
		return fmt.Errorf("%w: run id is required", ErrInvalid)
	case e.Schema != nil && !isObject(e.Schema):
		return fmt.Errorf("%w: schema is not a JSON object", ErrInvalid)
	}
	return checkText("elicitation id", e.ID, "source", e.Source, "message", e.Message)
}

// ElicitationAnswer is the user's answer to an elicitation.
type ElicitationAnswer struct {
	Action ElicitationAction
	// Content is the requested object, with accept; ignored otherwise.
	Content json.RawMessage
}

// Validate reports an ErrInvalid error for an answer that cannot be
// recorded.
func (a ElicitationAnswer) Validate() error {
	switch a.Action {
	case ActionAccept:
		if a.Content != nil && !isObject(a.Content) {
			return fmt.Errorf("%w: content is not a JSON object", ErrInvalid)
		}
		return nil
	case ActionDecline, ActionCancel:
		return nil
	}
	return fmt.Errorf("%w: action %q is not accept, decline or cancel", ErrInvalid, a.Action)
}

// Status is the status an elicitation answered so takes.
func (a ElicitationAnswer) Status() ElicitationStatus {
	switch a.Action {
	case ActionAccept:
		return ElicitationAccepted
	case ActionDecline:
		return ElicitationDeclined
	case ActionCancel:
		return ElicitationCancelled
	}
	return ""
}
