package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/trellis-ai/trellis/events"
)

// Store is everything the chat service keeps. Implementations are safe for
// concurrent use, also by several processes sharing one database, and pass
// storetest.Run. Each part is an interface of its own, so code that needs
// only one part (the SSE replay needs Events) can ask for only that.
type Store interface {
	Conversations
	Runs
	Events
	HumanRequests
	ToolCalls
	Queue
	UsageLog

	// Ping reports whether the database answers and its schema is
	// migrated; it backs /readyz.
	Ping(ctx context.Context) error
}

// Conversations keeps conversations and their messages.
type Conversations interface {
	// CreateConversation stores a new, empty conversation of c.UserID,
	// with c.ID as its id when set. Returns ErrInvalid when the user id
	// is empty, ErrConflict when c.ID is taken (by any user), and
	// ErrErasing when the user is being erased (see Users.BeginErasure).
	CreateConversation(ctx context.Context, c NewConversation) (Conversation, error)

	// GetConversation returns the user's conversation. Returns ErrNotFound
	// when there is none with that id, or it is another user's.
	GetConversation(ctx context.Context, userID, id string) (Conversation, error)

	// ListConversations returns a page of the user's conversations, newest
	// first. Returns ErrInvalid for a negative limit or a cursor that
	// ListConversations did not make.
	ListConversations(ctx context.Context, userID string, page Page) (ConversationPage, error)

	// IdleConversations returns a page of every user's conversations
	// last updated before before, oldest first, for a retention policy
	// to erase. Returns ErrInvalid for a negative limit or a cursor it
	// did not make.
	IdleConversations(ctx context.Context, before time.Time, page Page) (ConversationPage, error)

	// SetConversationMetadata replaces the conversation's metadata (a
	// JSON object; empty means {}) and returns the conversation.
	// Returns ErrNotFound when the conversation is unknown or another
	// user's, ErrInvalid for metadata that is not a JSON object.
	SetConversationMetadata(ctx context.Context, userID, id string, metadata json.RawMessage) (Conversation, error)

	// RenameConversation gives the user's conversation the title the
	// user chose (CheckTitle), which a generated title never replaces,
	// and returns the conversation as stored. Returns ErrNotFound,
	// ErrInvalid, or ErrErasing when the user is being erased (see
	// Users.BeginErasure).
	RenameConversation(ctx context.Context, userID, id, title string) (Conversation, error)
	// SetGeneratedTitle replaces the conversation's title with a
	// generated one unless the user renamed it, and reports whether it
	// did. Returns ErrNotFound, ErrInvalid, or ErrErasing.
	SetGeneratedTitle(ctx context.Context, userID, id, title string) (bool, error)

	// BeginDelete marks the conversation as being deleted, the first
	// step of deleting it: from then on StartRun and StartQueuedRun on
	// it, ResumeRun of its runs, EnqueueRun on it and CreateDocument into it return
	// ErrNotFound, as they will once it is gone, so that nothing is
	// written for it after the caller has deleted its graph thread and
	// files. It stays readable until DeleteConversation. Returns
	// ErrNotFound when the conversation is unknown or another user's.
	BeginDelete(ctx context.Context, userID, id string) error

	// DeleteConversation removes the conversation with its runs, messages,
	// events, human requests and documents' rows, all at once. The caller
	// deletes the graph thread of the same id and the documents' files
	// first, so a crash in between leaves the conversation to delete
	// again, not data that no record names. Deleting a conversation whose run
	// is still running makes that run's next AppendEvent fail with
	// ErrNotFound. Returns ErrNotFound when the conversation is unknown or
	// another user's.
	DeleteConversation(ctx context.Context, userID, id string) error

	// AddMessage stores a message of the run, in the run's conversation.
	// StartRun stores the user's message itself; this is for the rest
	// (the assistant's answer). Returns ErrNotFound when the run is
	// unknown and ErrInvalid for an unknown role or malformed JSON.
	AddMessage(ctx context.Context, m NewMessage) (Message, error)

	// RunMessages returns the run's messages, in creation order: its
	// transcript, which is one item of a page as ListRuns counts it (a
	// run's messages are never split between pages). A conversation's
	// messages are read a page of runs at a time, with ListRuns. Returns
	// ErrNotFound when the run is unknown or another user's.
	RunMessages(ctx context.Context, userID, runID string) ([]Message, error)
}

// Runs keeps runs and enforces one active run per conversation.
type Runs interface {
	// StartRun stores a running run of r.ConversationID, owned by r.Owner,
	// and the user's message, and touches the conversation's UpdatedAt.
	// With r.NewConversation set it stores that conversation first, in
	// the same transaction, and the run is its first.
	//
	// The run follows (Run.ParentID) the last run of the active branch, or
	// with r.Supersedes the run that one follows: it is a new version of
	// that turn.
	//
	// With r.Supersedes set it first marks that run and every later run
	// of the conversation superseded and expires their pending human
	// requests (edit and rerun); r.CheckpointID defaults to the
	// superseded run's.
	//
	// The message answers the conversation's pending clarifying question,
	// if one waits (the agent takes it as the answer): the request is
	// recorded answered, with the message, in the same transaction.
	//
	// It returns ErrRunActive when the conversation has an active run
	// (see Run.Active) that is not being superseded, or when a run being
	// superseded is still running: cancel it first; and while the
	// deadline of a clarifying question has decided it (timed out) and
	// the run that asked is still parked on it, not superseded: the
	// deadline won over the message, and its outcome comes first. It returns ErrNotFound
	// when the conversation is unknown or another user's, or r.Supersedes
	// names no run of it; ErrConflict when r.Supersedes is superseded
	// already; ErrErasing when the user is being erased (see
	// Users.BeginErasure); ErrInvalid for a missing user, conversation
	// or message. On any error nothing is changed: a new conversation is not kept
	// either.
	StartRun(ctx context.Context, r NewRun) (Run, error)

	// GetRun returns the user's run. Returns ErrNotFound when it is
	// unknown or another user's.
	GetRun(ctx context.Context, userID, runID string) (Run, error)

	// RunInput returns the NewRun.Input the user's run started with. It
	// is kept until the run's stream first ends (FinishRun, EndRun), so
	// it is nil for a run that has ended or stopped once, and for one
	// started without it. Returns ErrNotFound when the run is unknown or
	// another user's.
	RunInput(ctx context.Context, userID, runID string) (json.RawMessage, error)

	// LatestRun returns the last run of the conversation's active branch:
	// the active run if there is one, else the most recently started run
	// not superseded. Returns ErrNotFound when the conversation is
	// unknown, another user's, or has no run.
	LatestRun(ctx context.Context, userID, conversationID string) (Run, error)

	// ActiveUsers returns, in order, every user with a run that is
	// running or parked on an interrupt: whose runs a process starting
	// may have to continue (recovery), whoever authenticated them.
	ActiveUsers(ctx context.Context) ([]string, error)

	// ListRuns returns a page of the conversation's runs, oldest first,
	// each with its first q.EventLimit events in sequence order, and the
	// messages of those runs; all of it is read from one snapshot. A
	// reader holds one page however long the conversation and its runs.
	// Returns ErrNotFound when the conversation is unknown or another
	// user's, and ErrInvalid for a negative limit or a cursor that
	// ListRuns did not make.
	ListRuns(ctx context.Context, userID, conversationID string, q RunQuery) (RunPage, error)

	// FinishRun ends the stream of a running or interrupted run with
	// end.Status (anything but running), records end.Usage as the run's
	// total and sets CompletedAt, and adds to the usage record what the
	// end brings (see UsageLog), in the same transaction. A final status (completed, cancelled,
	// failed) also expires the run's pending human requests;
	// interrupted keeps them, since they are what the run waits for.
	// Returns ErrNotFound for an unknown run, ErrConflict when the run has
	// ended already, and ErrInvalid for a status or reason that cannot
	// be used.
	FinishRun(ctx context.Context, runID string, end RunEnd) (Run, error)

	// EndRun is FinishRun and then AppendEvents of evs, the run's last
	// events (the one announcing the end last), in one transaction: a
	// reader who sees the events finds the run ended, and a run that
	// ends costs one commit. evs must be of runID, with end.Owner as
	// their owner. It also says whether messages wait in the
	// conversation's queue, so that ending a turn costs no second read
	// to find out. Errors are FinishRun's and AppendEvents'; on an
	// error nothing is stored.
	EndRun(ctx context.Context, runID string, end RunEnd, evs []NewEvent) (RunEnded, error)

	// ResumeRun sets an interrupted, not superseded run running again,
	// owned by owner, and clears CompletedAt and InterruptReason. It
	// returns ErrNotFound for an unknown run, ErrConflict when the run is
	// not interrupted or was superseded, and ErrRunActive when resuming it
	// would make a second active run (a clarification answered by a later
	// run, say).
	ResumeRun(ctx context.Context, runID, owner string) (Run, error)

	// Branches returns the versions of the user's run's turn (the runs
	// that follow the run it follows, itself included), oldest first,
	// each with the last run of its branch. Returns ErrNotFound when the
	// run is unknown or another user's.
	Branches(ctx context.Context, userID, runID string) ([]Branch, error)

	// SetBranch makes the branch of the user's run the conversation's
	// active one, in one transaction: the runs of the branch (those it
	// follows, itself, and those that follow it up to its last run, see
	// Branch.HeadRunID) are no longer superseded, every other run is, and
	// what those left pending expires. It returns the branch's last run.
	// Returns ErrNotFound when the run is unknown or another user's,
	// ErrRunActive while the conversation has an active run, and
	// ErrConflict when the branch's last run was parked on a request a
	// person can no longer answer (it expired when the branch was left).
	SetBranch(ctx context.Context, userID, runID string) (Run, error)
}

// Events is the per-run event log behind SSE and its replay.
type Events interface {
	// AppendEvent stores e under the run's next sequence number, from 1
	// and without gaps, also when several goroutines or processes append
	// to one run at once, and returns it. The stored Data is e.Data with
	// "seq":N as its first member: {"seq":N,...e.Data's members}. It is
	// the exact line to send as SSE data, so send what AppendEvent
	// returns. Returns ErrNotFound when the run is unknown (or its
	// conversation was deleted) and ErrInvalid when e.Data is not a
	// one-line JSON object or e.Type is empty.
	AppendEvent(ctx context.Context, e NewEvent) (Event, error)

	// AppendEvents stores events of one run as AppendEvent would, in
	// order under consecutive sequence numbers, in one transaction: all
	// are stored or none is. It returns them as stored. Its errors are
	// AppendEvent's, and ErrInvalid for an empty list or events of more
	// than one run.
	AppendEvents(ctx context.Context, evs []NewEvent) ([]Event, error)

	// EventsAfter returns a page of the run's events: the first limit
	// (see EventLimit) with a sequence number above afterSeq, in order,
	// never nil. Fewer than the limit means no more were stored when it
	// read; the next page is after the last one's Seq. Returns ErrNotFound
	// when the run is unknown or another user's, and ErrInvalid for a
	// negative limit.
	EventsAfter(ctx context.Context, userID, runID string, afterSeq int64, limit int) ([]Event, error)

	// CompactEvents compacts the events of at most limit runs, across
	// users, that ended completed, failed or cancelled before before and
	// were not compacted yet, the oldest ends first: of each, only the
	// events of CompactedKeeps stay, under their numbers (the run's
	// numbers then have gaps), with any that a webhook delivery still has
	// to send. It returns how many runs it
	// compacted and how many events it deleted; fewer runs than limit
	// means that none is left to compact. Returns ErrInvalid for a limit
	// that is not positive.
	CompactEvents(ctx context.Context, before time.Time, limit int) (runs, deleted int, err error)
}

// HumanRequests keeps the questions runs wait on until a human answers:
// approvals, elicitations, clarifications and uncertain calls, one kind
// each (see events.PendingKind).
type HumanRequests interface {
	// CreateHumanRequest stores a pending request of the run, in the run's
	// conversation and owned by the run's user. An empty r.ID gets a fresh
	// one. Returns ErrNotFound for an unknown run, ErrConflict when r.ID
	// is taken by a request of its kind, and ErrInvalid for an unknown
	// kind or a malformed part (args, schema).
	CreateHumanRequest(ctx context.Context, r NewHumanRequest) (HumanRequest, error)

	// GetHumanRequest returns the user's request of the kind. Returns
	// ErrNotFound when it is unknown, of another kind or another user's.
	GetHumanRequest(ctx context.Context, kind events.PendingKind, userID, id string) (HumanRequest, error)

	// PendingHumanRequests returns a page of the user's pending requests
	// of the kind, oldest first, of one conversation, or of all when
	// conversationID is "". Returns ErrNotFound when a conversation is
	// named that is unknown or another user's, and ErrInvalid for a
	// negative limit or a cursor that PendingHumanRequests did not make.
	PendingHumanRequests(ctx context.Context, kind events.PendingKind, userID, conversationID string, page Page) (HumanRequestPage, error)

	// ResolveHumanRequest records the answer if the request (of the
	// answer's kind) is still pending: of several concurrent answers
	// exactly one wins and the others get ErrAlreadyResolved, as does any
	// answer to an expired request. Checking an elicitation's content
	// against its schema is the caller's job (HTTP 422). Returns
	// ErrNotFound when the request is unknown or another user's, and
	// ErrInvalid for an answer that cannot be used (unknown decision or
	// action, edit without an args object, malformed content); then
	// nothing is changed.
	ResolveHumanRequest(ctx context.Context, userID, id string, ans HumanAnswer) (HumanRequest, error)
}

// Users erases what the record holds of a user, for the erasure of a
// user (DELETE /api/v1/me). The conversations' graph threads and their
// documents' files are not in the record: the caller deletes them, one
// conversation at a time (see Conversations.DeleteConversation), before
// calling EraseUser for the rest.
type Users interface {
	// BeginErasure marks the user as being erased: from then until
	// EraseUser, whatever would store something new of theirs (a
	// conversation, a run, a document, a memory, a profile) fails with
	// ErrErasing and changes nothing, whichever way it came, so that
	// nothing made meanwhile outlives the erasure. Writes to what exists
	// already (a live run's events, answers to its questions) go on:
	// the erasure stops the runs and deletes what they wrote. Marking a
	// user marked already is not an error. Returns ErrInvalid for an
	// empty user id.
	BeginErasure(ctx context.Context, userID string) error
	// EraseUser deletes everything of the user's, in one transaction:
	// their conversations with all that belongs to them (runs, messages,
	// events, human requests, documents, chunks and their index rows),
	// their memories, profile, sessions and share of the tool stats, their
	// workspace files (user and conversation scopes), the projects they
	// own (with those projects' files) and their memberships; and it lifts
	// the mark of BeginErasure, so that the user may start afresh. It
	// returns how many conversations went. Erasing a user of whom
	// nothing is stored deletes nothing and is not an error. Returns
	// ErrInvalid for an empty user id.
	EraseUser(ctx context.Context, userID string) (int, error)
}
