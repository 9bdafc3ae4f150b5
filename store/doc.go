// Package store is the chat service's persistent record: conversations,
// runs, the messages and events of each run, and the human requests a run
// waits on: approvals, elicitations, clarifications and uncertain calls,
// one HumanRequest with a kind (events.PendingKind), a shared HumanStatus
// and a typed part per kind; and, through Documents, the records of uploaded documents,
// their chunks and the full-text index over them; through Memories, what
// the agent remembers of each user; through ToolCalls, the record of the
// calls that must not run twice on their own; through Keys, the API keys
// issued in the service, as hashes; through Sessions, the page's sign-in
// sessions, as hashes; through Users, erasing a user from all of it
// (their sessions too; their issued keys stay: they are the operators'); and
// through Webhooks, the deliveries of events to the operator's webhook
// endpoints, recorded in the transaction that stores their event, with
// their attempts; and through UsageLog, what each user spent per model
// and UTC day (tokens, tool calls, runs), added to in the transaction
// that ends a run; and through Workspaces, the agent's files (their
// versions, naming objects of the document file store, and each scope's
// usage) and the projects that share them. It owns the domain types, the Store interface the
// service calls, and the sentinel errors the HTTP layer maps to status
// codes; implementations live in subpackages named for their database
// (sqlitestore, pgstore) and all pass storetest.Run. Their SQL is written
// once, where the two databases read it alike, in internal/sqlstore; each
// subpackage keeps its driver, its schema and what only its database does.
//
// # Ownership
//
// Everything belongs to one user. Every method a request can name an id
// through takes the user id too, and answers ErrNotFound for another
// user's ids exactly as for unknown ones, changing nothing. Methods that
// only the process running a run calls (AppendEvent, FinishRun, EndRun,
// ResumeRun, AddMessage, CreateHumanRequest) take the run's id alone.
//
// # Text
//
// Every backend keeps the same text: valid UTF-8 without NUL characters
// (ValidText), which is what PostgreSQL's text can hold. Writing other
// text, or JSON that is not valid UTF-8, is ErrInvalid; an id that is not
// ValidText names nothing, so calls given one return ErrNotFound (lists
// of a user who cannot exist are empty). JSON keeps escapes as they are,
// \u0000 included.
//
// # Deadlines
//
// An approval or an elicitation may have a deadline
// (HumanRequest.ExpiresAt) and what happens then (OnExpiry, one of
// events.ExpiryOutcomes of its kind). A DeadlineAnswer resolves it as a person's
// answer does, in the same conditional update, so of the two exactly one
// wins; the request is then marked TimedOut.
//
// # One active run per conversation
//
// A run is active while it is not superseded and is either running or
// interrupted waiting on an approval, an elicitation or an uncertain
// call (see Run.Active). A
// run parked on a clarifying question is not active: the user's next
// message is its answer and starts the next run. The database enforces the
// rule with a unique index, so two requests, or two processes sharing a
// PostgreSQL database, cannot both start a run: the loser gets
// ErrRunActive.
//
// # Queued messages
//
// Queue keeps the messages sent, with the enqueue strategy, to a
// conversation whose run was going or waiting. StartQueuedRun turns the
// first into a run of the same id and takes it out of the queue in one
// transaction, under the same unique index: of processes racing, one
// starts it, once, and only when no run is active.
//
// # Events
//
// AppendEvent gives each event of a run the next sequence number, from 1
// with no gaps, in the same transaction that stores it; the stored data is
// the exact SSE data line, so a client reconnecting with Last-Event-ID is
// replayed byte for byte what it missed. An event may carry a message
// (NewEvent.Message: the answer response.done shows), stored with it in
// the same transaction by AppendEvents and EndRun.
//
// # Edit and rerun
//
// StartRun with NewRun.Supersedes marks that run and every later run of the
// conversation superseded, expires what they left pending, and starts the
// new run, all in one transaction: a request that fails changes nothing.
//
// # Branches
//
// Each run records the run it follows (Run.ParentID): the active
// branch's last run, or for an edit the run its edited run follows. A
// conversation's runs are thus a tree whose forks are edited turns, and
// the runs not superseded are one path of it from the first turn, the
// active branch, along which run numbers grow; LatestRun is its last
// run. Branches lists a turn's versions, ListRuns with RunQuery.Branch
// reads any branch, and SetBranch makes one the active branch in one
// transaction, refused while a run is active. Runs stored before parents
// were recorded got them from the migration: the active branch exactly,
// and each stretch of runs edited away as one earlier branch.
//
// # Documents
//
// Documents is an interface beside Store, which both backends implement:
// a document's record (its bytes live in documents.Storage), its status
// as processing moves it, its chunks, and ranked full-text search over
// chunks scoped to a user, a conversation or chosen documents. The index
// is each database's own (FTS5 and BM25 on SQLite, a tsvector with a GIN
// index and ts_rank on PostgreSQL); the rest of the SQL is shared. The
// per-conversation document limit is enforced in the transaction that
// stores the document, under the conversation's row lock, so concurrent
// uploads cannot pass it.
//
// # Pagination
//
// Nothing is read whole that can grow without bound: a reader holds one
// page at a time. Conversations list newest first by creation time, then
// id; a conversation's runs oldest first (ListRuns), each with its first
// events and with the messages of the page's runs; a run's events by
// sequence number after the last one read (EventsAfter), the number a
// client gives as Last-Event-ID. Cursors are opaque; each names the last
// row returned, so rows created while a client pages do not shift the
// pages it has yet to read.
package store
