package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/trellis-ai/trellis/events"
)

// RunStatus is where a run is in its life.
type RunStatus string

// Run statuses. Running and interrupted may change; the others are final.
const (
	RunRunning     RunStatus = "running"
	RunInterrupted RunStatus = "interrupted" // parked; see InterruptReason
	RunCompleted   RunStatus = "completed"
	RunCancelled   RunStatus = "cancelled"
	RunFailed      RunStatus = "failed"
)

// Final reports whether a run with status s can no longer change.
func (s RunStatus) Final() bool {
	return s == RunCompleted || s == RunCancelled || s == RunFailed
}

func (s RunStatus) valid() bool {
	return s == RunRunning || s == RunInterrupted || s.Final()
}

// Run is one turn of a conversation: the user's message and everything the
// agent did about it. Its JSON is a run of GET /conversations/{id}.
type Run struct {
	ID             string    `json:"id"`
	ConversationID string    `json:"conversation_id"`
	UserID         string    `json:"-"`
	Status         RunStatus `json:"status"`
	// InterruptReason is set while Status is interrupted, else "".
	InterruptReason events.PendingKind `json:"interrupt_reason,omitempty"`
	UserMessage     string             `json:"user_message"`
	// Usage is the run's token usage, as last given to FinishRun.
	Usage     events.Usage `json:"usage"`
	CreatedAt time.Time    `json:"created_at"`
	// CompletedAt is when the run's stream last ended (final or
	// interrupted); nil while it runs.
	CompletedAt *time.Time `json:"completed_at"`
	// Superseded: the run is not on the conversation's active branch: an
	// edit (or a retry) reran the conversation from before it, or another
	// branch was made active (SetBranch).
	Superseded bool `json:"superseded"`
	// ParentID is the run this one follows: the turn before it on its
	// branch, "" for a first turn. Runs that follow the same run are the
	// versions of one turn (Branches).
	ParentID string `json:"parent_id"`
	// Versions places the run among its turn's versions when there are
	// several; set by ListRuns only.
	Versions *Versions `json:"versions,omitempty"`
	// CheckpointID is the graph checkpoint the run started from, where an
	// edit forks.
	CheckpointID string `json:"-"`
	RequestID    string `json:"request_id,omitempty"`
	// Owner names the process running the run.
	Owner string `json:"-"`
	// LastSeq is the sequence number of the run's last event, 0 before
	// the first; since sequence numbers have no gaps, also the number of
	// its events.
	LastSeq int64 `json:"last_seq"`
	// Documents tells whether the run's conversation held documents
	// when the run started; set by StartRun only, so that a turn on a
	// conversation that held none need not read them.
	Documents bool `json:"-"`
}

// Versions is where a run stands among the versions of its turn: the
// runs that follow the same run (see Run.ParentID), oldest first.
type Versions struct {
	// Index is the run's place, from 1.
	Index int `json:"index"`
	// Count is how many versions the turn has.
	Count int `json:"count"`
}

// Branch is one version of a turn and the branch it starts: Branches
// lists them.
type Branch struct {
	// RunID is the version's run.
	RunID       string    `json:"run_id"`
	UserMessage string    `json:"user_message"`
	Status      RunStatus `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
	// HeadRunID is the branch's last run: the active branch's last when
	// the version is on it, else the newest run that follows the version.
	HeadRunID string `json:"head_run_id"`
	// Active: the version is on the conversation's active branch.
	Active bool `json:"active"`
}

// Active reports whether r keeps another run of its conversation from
// starting: it is not superseded, and it is running or parked waiting on
// an approval or an elicitation. A run parked on a clarifying question is
// not active, because the user's next message answers it. The databases
// enforce the same rule with a unique index.
func (r Run) Active() bool {
	if r.Superseded {
		return false
	}
	return r.Status == RunRunning || (r.Status == RunInterrupted && r.InterruptReason != events.PendingClarification)
}

// NewRun is what StartRun needs.
type NewRun struct {
	UserID string // required
	// ConversationID names the run's conversation; required unless
	// NewConversation is set, and empty then.
	ConversationID string
	// NewConversation, when set, starts the run in a new conversation,
	// stored in the same transaction as the run, so a run that cannot
	// start leaves no conversation behind. Its UserID must be UserID.
	// The returned Run names the new conversation.
	NewConversation *NewConversation
	UserMessage     string // required
	RequestID       string
	Owner           string
	CheckpointID    string
	// Supersedes names the run an edit reruns: it and every later run of
	// the conversation are marked superseded.
	Supersedes string
	// Input is what the run's starter needs to start the run again
	// should its process die before the run stored anything elsewhere
	// (see Runs.RunInput); opaque to the store.
	Input json.RawMessage
	// Model is the model the run was asked to use, as the starter
	// resolved it: the usage record (UsageLog) counts the run's tokens
	// under it. "" is recorded as "default".
	Model string
}

// Validate reports an ErrInvalid error for a run that cannot start.
func (r NewRun) Validate() error {
	switch {
	case r.UserID == "":
		return fmt.Errorf("%w: user id is required", ErrInvalid)
	case r.ConversationID == "" && r.NewConversation == nil:
		return fmt.Errorf("%w: conversation id is required", ErrInvalid)
	case r.ConversationID != "" && r.NewConversation != nil:
		return fmt.Errorf("%w: a run in a new conversation names no conversation id", ErrInvalid)
	case r.UserMessage == "":
		return fmt.Errorf("%w: user message is required", ErrInvalid)
	}
	if c := r.NewConversation; c != nil {
		if err := c.Validate(); err != nil {
			return err
		}
		if c.UserID != r.UserID {
			return fmt.Errorf("%w: the new conversation is %s's, the run %s's", ErrInvalid, c.UserID, r.UserID)
		}
	}
	return checkText("user message", r.UserMessage, "request id", r.RequestID, "owner", r.Owner, "checkpoint id", r.CheckpointID, "model", r.Model)
}

// RunEnd is how a run's stream ended.
type RunEnd struct {
	Status RunStatus // interrupted, completed, cancelled or failed
	// Reason is required with interrupted and must be empty otherwise.
	Reason events.PendingKind
	// Usage is the run's total so far; the usage record (UsageLog) adds
	// what it grew by since the run's stream last ended.
	Usage events.Usage
	// ToolCalls are the tool calls the run made since it started or was
	// last resumed: each stretch counts its own, once, in the usage
	// record. Negative is ErrInvalid.
	ToolCalls int
	// Owner, when set, fences the write: it fails with ErrNotOwner
	// unless the run is owned by Owner.
	Owner string
}

// RunEnded is what EndRun stored, and what it saw in passing.
type RunEnded struct {
	// Events are the events given, as stored.
	Events []Event
	// Queued: messages wait in the run's conversation's queue (see
	// Queue), to start once the run's turn is over.
	Queued bool
}

// Validate reports an ErrInvalid error for an end FinishRun cannot record.
func (e RunEnd) Validate() error {
	switch {
	case !e.Status.valid() || e.Status == RunRunning:
		return fmt.Errorf("%w: a run cannot end with status %q", ErrInvalid, e.Status)
	case e.Status == RunInterrupted && !e.Reason.Valid():
		return fmt.Errorf("%w: interrupt reason %q is not approval, elicitation or clarification", ErrInvalid, e.Reason)
	case e.Status != RunInterrupted && e.Reason != "":
		return fmt.Errorf("%w: a %s run has no interrupt reason", ErrInvalid, e.Status)
	case e.ToolCalls < 0:
		return fmt.Errorf("%w: %d tool calls", ErrInvalid, e.ToolCalls)
	}
	return checkText("owner", e.Owner)
}

// RunWithEvents is a run and its first events, as GET /conversations/{id}
// renders them.
type RunWithEvents struct {
	Run
	Events []Event `json:"events"`
	// EventsTruncated: Events holds only the run's first events; the rest
	// follow its last one (EventsAfter).
	EventsTruncated bool `json:"events_truncated"`
}

// MarshalJSON writes the run's fields and its events, [] when there are
// none.
func (r RunWithEvents) MarshalJSON() ([]byte, error) {
	type plain RunWithEvents // without this method
	if r.Events == nil {
		r.Events = []Event{}
	}
	return json.Marshal(plain(r))
}

// Limits of RunQuery.Limit.
const (
	DefaultRunLimit = 20
	MaxRunLimit     = 50
)

// RunQuery selects a page of a conversation's runs.
type RunQuery struct {
	// Limit is the most runs returned; 0 means DefaultRunLimit, and more
	// than MaxRunLimit means MaxRunLimit. Negative is ErrInvalid.
	Limit int
	// Cursor is the NextCursor of the previous page; "" starts at the
	// conversation's first run.
	Cursor string
	// EventLimit is the most events returned with each run, its first
	// ones; see EventLimit.
	EventLimit int
	// Branch, when set, names a run of the conversation: the page holds
	// only the runs of its branch, the runs it follows and those that
	// follow it up to the branch's last run (see Branch.HeadRunID).
	Branch string
}

// Size returns the number of runs the page holds at most, or an
// ErrInvalid error.
func (q RunQuery) Size() (int, error) { return size(q.Limit, DefaultRunLimit, MaxRunLimit) }

// RunPage is one page of ListRuns.
type RunPage struct {
	// Runs are oldest first, each with its first events.
	Runs []RunWithEvents
	// Messages are the messages of Runs, in run order and in creation
	// order within a run.
	Messages []Message
	// NextCursor fetches the next page; "" when this page is the last.
	NextCursor string
}
