package store

import "errors"

// Sentinel errors; implementations wrap them with what they were doing, so
// match them with errors.Is.
var (
	// ErrNotFound: no such conversation, run, approval or elicitation, or
	// one that belongs to another user. HTTP 404.
	ErrNotFound = errors.New("store: not found")
	// ErrRunActive: the conversation already has an active run (see
	// Run.Active). HTTP 409.
	ErrRunActive = errors.New("store: a run is active on the conversation")
	// ErrAlreadyResolved: the approval or elicitation was answered,
	// cancelled or expired already. HTTP 409.
	ErrAlreadyResolved = errors.New("store: already resolved")
	// ErrConflict: the record exists but its state does not allow the
	// change: finishing a run that has ended, resuming one that is not
	// interrupted, editing a superseded run, or creating an approval or
	// elicitation with an id already taken.
	ErrConflict = errors.New("store: conflict")
	// ErrInvalid: an argument cannot be used (empty user id, unknown
	// status, malformed JSON, bad cursor). Nothing was changed. HTTP 400.
	ErrInvalid = errors.New("store: invalid input")
	// ErrNotOwner: a write fenced with an owner (NewEvent.Owner,
	// RunEnd.Owner) found the run owned by another process: it was taken
	// over, and the writer must stop acting for it. Nothing was changed.
	ErrNotOwner = errors.New("store: the run is owned by another process")
	// ErrTooMany: the conversation holds as many documents as it may.
	// Nothing was changed. HTTP 409.
	ErrTooMany = errors.New("store: the conversation has as many documents as it may hold")
	// ErrErasing: the user is being erased (Users.BeginErasure), so
	// nothing new of theirs may be stored until the erasure completes.
	// Nothing was changed. HTTP 409.
	ErrErasing = errors.New("store: the user is being erased")
	// ErrQuota: a workspace scope would hold more bytes or files than
	// it may (Workspaces.PutFile). Nothing was changed. HTTP 409.
	ErrQuota = errors.New("store: the workspace's quota is exceeded")
)
