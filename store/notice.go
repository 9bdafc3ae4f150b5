package store

import "fmt"

// NoticeKind says what happened that the process owning a run must learn.
type NoticeKind string

// Notice kinds.
const (
	// NoticeApproval: an approval of the run was answered; ID names it.
	NoticeApproval NoticeKind = "approval"
	// NoticeElicitation: an elicitation of the run was answered; ID
	// names it.
	NoticeElicitation NoticeKind = "elicitation"
	// NoticeElicitationCancel: the user cancelled an elicitation of the
	// run; ID names it.
	NoticeElicitationCancel NoticeKind = "elicitation_cancel"
	// NoticeCancel: the user asked for the run to be cancelled.
	NoticeCancel NoticeKind = "cancel"
)

func (k NoticeKind) valid() bool {
	return k == NoticeApproval || k == NoticeElicitation || k == NoticeElicitationCancel || k == NoticeCancel
}

// hasID reports whether a notice of kind k names an approval or an
// elicitation.
func (k NoticeKind) hasID() bool {
	return k == NoticeApproval || k == NoticeElicitation || k == NoticeElicitationCancel
}

// Notice tells the process that owns a run (see Run.Owner) that something
// it waits for happened: the process that served the user's request sends
// it, the owner receives it.
//
// A notice only says what to look up in the store; it carries no answer.
// The answer itself is stored before the notice is sent, so a lost notice
// (the owner was restarting, the connection dropped) loses nothing stored:
// the receiver can also find it by polling the store, and a notice that
// arrives twice, late or for a run that has moved on reads state that is
// already settled.
type Notice struct {
	Kind NoticeKind `json:"kind"`
	// Owner is the process the notice is for: the run's Owner.
	Owner          string `json:"owner"`
	RunID          string `json:"run_id"`
	ConversationID string `json:"conversation_id,omitempty"`
	// UserID is the run's user, whose scope the owner reads the answer
	// in.
	UserID string `json:"user_id,omitempty"`
	// ID is the approval's or the elicitation's id, for the kinds that
	// name one; for NoticeCancel, the elicitation whose deadline
	// cancelled the run, or empty.
	ID string `json:"id,omitempty"`
}

// Validate reports an ErrInvalid error for a notice that cannot be
// delivered or acted on: no owner, an unknown kind, no run, or no id for
// a kind that names an approval or elicitation.
func (n Notice) Validate() error {
	switch {
	case n.Owner == "":
		return fmt.Errorf("%w: notice owner is required", ErrInvalid)
	case !n.Kind.valid():
		return fmt.Errorf("%w: unknown notice kind %q", ErrInvalid, n.Kind)
	case n.RunID == "":
		return fmt.Errorf("%w: a %s notice needs a run id", ErrInvalid, n.Kind)
	case n.Kind.hasID() && n.ID == "":
		return fmt.Errorf("%w: a %s notice needs the id of what was answered", ErrInvalid, n.Kind)
	}
	return nil
}
