package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// QueuedRun is a message sent to a conversation whose run was going or
// waiting, with the enqueue strategy: it waits in the conversation's
// queue until the runs before it have ended, then starts as a run of the
// same id (Queue.StartQueuedRun).
type QueuedRun struct {
	// ID is the queued message's id, and its run's once it starts.
	ID             string `json:"run_id"`
	ConversationID string `json:"conversation_id"`
	UserID         string `json:"-"`
	UserMessage    string `json:"user_message"`
	RequestID      string `json:"request_id,omitempty"`
	// Position is the message's place in its queue, from 1, when read.
	Position  int       `json:"position"`
	CreatedAt time.Time `json:"created_at"`
}

// NewQueuedRun is what EnqueueRun needs: what StartRun will be given.
type NewQueuedRun struct {
	UserID, ConversationID string // required
	UserMessage            string // required
	RequestID              string
	// Input is the run's NewRun.Input (opaque to the store).
	Input json.RawMessage
	// Model is the run's NewRun.Model.
	Model string
}

// Validate reports an ErrInvalid error for a message that cannot be
// queued.
func (q NewQueuedRun) Validate() error {
	switch {
	case q.UserID == "" || q.ConversationID == "":
		return fmt.Errorf("%w: user and conversation ids are required", ErrInvalid)
	case q.UserMessage == "":
		return fmt.Errorf("%w: user message is required", ErrInvalid)
	}
	return checkText("user message", q.UserMessage, "request id", q.RequestID, "model", q.Model)
}

// Queue keeps the messages that wait for their conversation's runs to
// end. A queued message belongs to its conversation: deleting the
// conversation, or erasing its user, deletes it.
type Queue interface {
	// EnqueueRun stores q at the end of its conversation's queue and
	// returns it with its position. Returns ErrNotFound when the
	// conversation is unknown or another user's, ErrInvalid, and
	// ErrErasing when the user is being erased.
	EnqueueRun(ctx context.Context, q NewQueuedRun) (QueuedRun, error)

	// QueuedRuns returns the conversation's queue, first first. Returns
	// ErrNotFound when the conversation is unknown or another user's.
	QueuedRuns(ctx context.Context, userID, conversationID string) ([]QueuedRun, error)

	// GetQueuedRun returns the user's queued message with its position.
	// Returns ErrNotFound when it is unknown, another user's, or no
	// longer queued (started or cancelled).
	GetQueuedRun(ctx context.Context, userID, id string) (QueuedRun, error)

	// CancelQueuedRun takes the user's message out of its queue: it will
	// not run. Returns ErrNotFound as GetQueuedRun does.
	CancelQueuedRun(ctx context.Context, userID, id string) error

	// DropQueuedRuns empties the conversation's queue. Returns
	// ErrNotFound when the conversation is unknown or another user's.
	DropQueuedRuns(ctx context.Context, userID, conversationID string) error

	// StartQueuedRun starts the first message of the conversation's
	// queue as StartRun does, as a run of its id owned by owner that
	// keeps its Input, and takes it out of the queue, in one
	// transaction: a queued message starts once, whichever process
	// starts it. Returns ErrNotFound when the queue is empty (or the
	// conversation unknown), ErrRunActive when the conversation has an
	// active run, and StartRun's other errors.
	StartQueuedRun(ctx context.Context, conversationID, owner string) (Run, error)

	// IdleQueues returns the first message of every queue, up to limit
	// (0: MaxLimit), whose conversation has no active run: messages a
	// process that died between a run's end and the start of the next
	// left waiting.
	IdleQueues(ctx context.Context, limit int) ([]QueuedRun, error)
}
