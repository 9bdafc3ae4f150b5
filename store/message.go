package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// Role says who wrote a message.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one message of a conversation's transcript. Its JSON is a
// message of GET /conversations/{id}.
type Message struct {
	ID             string          `json:"id"`
	ConversationID string          `json:"conversation_id"`
	RunID          string          `json:"run_id"`
	Role           Role            `json:"role"`
	Content        string          `json:"content"`
	Citations      json.RawMessage `json:"citations,omitempty"`
	Meta           json.RawMessage `json:"meta,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	// Superseded: the message's run was superseded by an edit.
	Superseded bool `json:"superseded"`
}

// NewMessage is what AddMessage needs.
type NewMessage struct {
	RunID     string // required
	Role      Role   // required
	Content   string
	Citations json.RawMessage // nil or valid JSON
	Meta      json.RawMessage // nil or valid JSON
}

// Validate reports an ErrInvalid error for a message that cannot be
// stored.
func (m NewMessage) Validate() error {
	switch {
	case m.RunID == "":
		return fmt.Errorf("%w: run id is required", ErrInvalid)
	case m.Role != RoleUser && m.Role != RoleAssistant:
		return fmt.Errorf("%w: role %q is not user or assistant", ErrInvalid, m.Role)
	}
	if err := checkText("content", m.Content); err != nil {
		return err
	}
	if err := optionalJSON("citations", m.Citations); err != nil {
		return err
	}
	return optionalJSON("meta", m.Meta)
}

// optionalJSON accepts nil and valid JSON.
func optionalJSON(what string, v json.RawMessage) error {
	if v != nil && !validJSON(v) {
		return fmt.Errorf("%w: %s is not valid JSON", ErrInvalid, what)
	}
	return nil
}

// AnswerMeta is the meta of an assistant's answer (Message.Meta): what the
// run service records of the turn beside its text, and what memory
// learns the turn from.
type AnswerMeta struct {
	// Outcome is how the turn ended: answered, direct, blocked, failed,
	// clarify or client_tools.
	Outcome   string `json:"outcome"`
	RequestID string `json:"request_id"`
	// Tools are the turn's tool calls, in order, and how each ended.
	Tools []AnswerTool `json:"tools,omitempty"`
	// NoMemory: the request kept the turn out of the user's memory.
	NoMemory bool `json:"no_memory,omitempty"`
}

// AnswerTool is one tool call of a turn: status success, error, rejected
// (by the user) or skipped.
type AnswerTool struct {
	Tool   string `json:"tool"`
	Status string `json:"status"`
}
