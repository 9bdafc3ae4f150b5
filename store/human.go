package store

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/trellis-ai/trellis/events"
)

// HumanStatus is where a human request is in its life: pending, answered
// (in a kind's own words) or expired. All but pending are final.
type HumanStatus string

// Human request statuses.
const (
	HumanPending HumanStatus = "pending"
	// HumanExpired: the run ended, or was superseded, before anyone
	// answered.
	HumanExpired HumanStatus = "expired"

	// An approval's answers.
	HumanApproved HumanStatus = "approved"
	HumanEdited   HumanStatus = "edited"
	HumanRejected HumanStatus = "rejected"

	// An elicitation's answers.
	HumanAccepted  HumanStatus = "accepted"
	HumanDeclined  HumanStatus = "declined"
	HumanCancelled HumanStatus = "cancelled"

	// A clarification's answer.
	HumanAnswered HumanStatus = "answered"

	// An uncertain call's answers.
	HumanRetried HumanStatus = "retried"
	HumanSkipped HumanStatus = "skipped"
	HumanFailed  HumanStatus = "failed"
)

// Answered reports whether a human answered: the status is final and not
// expired.
func (s HumanStatus) Answered() bool { return s != HumanPending && s != HumanExpired && s != "" }

// HumanRequest is a question a run waits on until a human answers it,
// owned by the run's user. What is asked, and answered, is in the part
// of its Kind; the other part is zero.
type HumanRequest struct {
	ID             string
	Kind           events.PendingKind
	ConversationID string
	RunID          string
	UserID         string
	Status         HumanStatus
	CreatedAt      time.Time
	ResolvedAt     *time.Time
	// ExpiresAt is the request's deadline, nil for none; OnExpiry is
	// what happens then.
	ExpiresAt *time.Time
	OnExpiry  events.ExpiryOutcome
	// TimedOut: the deadline decided the request (see DeadlineAnswer),
	// not a person.
	TimedOut bool

	Approval      Approval      // with events.PendingApproval
	Elicitation   Elicitation   // with events.PendingElicitation
	Clarification Clarification // with events.PendingClarification
	UncertainCall UncertainCall // with events.PendingUncertainCall
}

// HumanRequestPage is one page of PendingHumanRequests.
type HumanRequestPage struct {
	Requests []HumanRequest
	// NextCursor fetches the next page; "" when this page is the last.
	NextCursor string
}

// Approval is the part of a human request of events.PendingApproval: a
// tool call waiting for a human's yes, and the decision on it.
type Approval struct {
	ToolCallID string
	Tool       string
	Args       json.RawMessage // as proposed
	Revision   int
	Decision   events.DecisionKind
	// EditedArgs are the arguments an edit decided on.
	EditedArgs json.RawMessage
	Reason     string
}

// Elicitation is the part of a human request of
// events.PendingElicitation: a tool's request for input from the user,
// and what the user accepted with.
type Elicitation struct {
	Source  string
	Message string
	Schema  json.RawMessage // JSON Schema of the requested object
	Content json.RawMessage
}

// Clarification is the part of a human request of
// events.PendingClarification: the agent's question, and the message
// that answered it, which the StartRun of the run carrying it records.
type Clarification struct {
	Question string
	Answer   string
}

// UncertainCall is the part of a human request of
// events.PendingUncertainCall: the call that may have run, and what was
// decided (see events.CallDecision).
type UncertainCall struct {
	ToolCallID string
	Tool       string
	Args       json.RawMessage
}

// approvalJSON, elicitationJSON and clarificationJSON are a human request
// as the API shows it: an item of GET /approvals/pending (named as
// approval.required names them), of GET /elicitation/pending (named as
// elicitation.request names them) and of GET /clarifications/pending
// (named as run.interrupted and sync chat's pending.clarification name
// them).
type (
	approvalJSON struct {
		ID             string              `json:"approval_id"`
		ConversationID string              `json:"conversation_id"`
		RunID          string              `json:"run_id"`
		ToolCallID     string              `json:"tool_call_id"`
		Tool           string              `json:"tool"`
		Args           json.RawMessage     `json:"args"`
		Revision       int                 `json:"revision"`
		Status         HumanStatus         `json:"status"`
		Decision       events.DecisionKind `json:"decision,omitempty"`
		EditedArgs     json.RawMessage     `json:"edited_args,omitempty"`
		Reason         string              `json:"reason,omitempty"`
		CreatedAt      time.Time           `json:"created_at"`
		ResolvedAt     *time.Time          `json:"resolved_at,omitempty"`
		// expiry is the approval's deadline, when it has one.
		expiryJSON
	}
	// expiryJSON is a request's deadline as the API shows it.
	expiryJSON struct {
		ExpiresAt *time.Time           `json:"expires_at,omitempty"`
		OnExpiry  events.ExpiryOutcome `json:"on_expiry,omitempty"`
		TimedOut  bool                 `json:"timed_out,omitempty"`
	}
	elicitationJSON struct {
		ID             string          `json:"elicitation_id"`
		ConversationID string          `json:"conversation_id"`
		RunID          string          `json:"run_id"`
		Source         string          `json:"source"`
		Message        string          `json:"message"`
		Schema         json.RawMessage `json:"schema"`
		Status         HumanStatus     `json:"status"`
		Content        json.RawMessage `json:"content,omitempty"`
		CreatedAt      time.Time       `json:"created_at"`
		ResolvedAt     *time.Time      `json:"resolved_at,omitempty"`
		// expiry is the elicitation's deadline, when it has one.
		expiryJSON
	}
	clarificationJSON struct {
		ID             string      `json:"clarification_id"`
		ConversationID string      `json:"conversation_id"`
		RunID          string      `json:"run_id"`
		Question       string      `json:"question"`
		Status         HumanStatus `json:"status"`
		Answer         string      `json:"answer,omitempty"`
		CreatedAt      time.Time   `json:"created_at"`
		ResolvedAt     *time.Time  `json:"resolved_at,omitempty"`
		expiryJSON
	}
	// uncertainCallJSON is an item of GET /uncertain-calls/pending,
	// named as tool.uncertain names it.
	uncertainCallJSON struct {
		ID             string              `json:"uncertain_call_id"`
		ConversationID string              `json:"conversation_id"`
		RunID          string              `json:"run_id"`
		ToolCallID     string              `json:"tool_call_id"`
		Tool           string              `json:"tool"`
		Args           json.RawMessage     `json:"args"`
		Status         HumanStatus         `json:"status"`
		Decision       events.CallDecision `json:"decision,omitempty"`
		CreatedAt      time.Time           `json:"created_at"`
		ResolvedAt     *time.Time          `json:"resolved_at,omitempty"`
		expiryJSON
	}
)

// MarshalJSON writes the request as the API shows one of its kind.
func (r HumanRequest) MarshalJSON() ([]byte, error) {
	switch r.Kind {
	case events.PendingApproval:
		a := r.Approval
		return json.Marshal(approvalJSON{ID: r.ID, ConversationID: r.ConversationID, RunID: r.RunID,
			ToolCallID: a.ToolCallID, Tool: a.Tool, Args: a.Args, Revision: a.Revision, Status: r.Status,
			Decision: a.Decision, EditedArgs: a.EditedArgs, Reason: a.Reason, CreatedAt: r.CreatedAt, ResolvedAt: r.ResolvedAt,
			expiryJSON: expiryJSON{ExpiresAt: r.ExpiresAt, OnExpiry: r.OnExpiry, TimedOut: r.TimedOut}})
	case events.PendingElicitation:
		e := r.Elicitation
		return json.Marshal(elicitationJSON{ID: r.ID, ConversationID: r.ConversationID, RunID: r.RunID,
			Source: e.Source, Message: e.Message, Schema: e.Schema, Status: r.Status, Content: e.Content,
			CreatedAt: r.CreatedAt, ResolvedAt: r.ResolvedAt,
			expiryJSON: expiryJSON{ExpiresAt: r.ExpiresAt, OnExpiry: r.OnExpiry, TimedOut: r.TimedOut}})
	case events.PendingClarification:
		c := r.Clarification
		return json.Marshal(clarificationJSON{ID: r.ID, ConversationID: r.ConversationID, RunID: r.RunID,
			Question: c.Question, Status: r.Status, Answer: c.Answer, CreatedAt: r.CreatedAt, ResolvedAt: r.ResolvedAt,
			expiryJSON: expiryJSON{ExpiresAt: r.ExpiresAt, OnExpiry: r.OnExpiry, TimedOut: r.TimedOut}})
	case events.PendingUncertainCall:
		u := r.UncertainCall
		return json.Marshal(uncertainCallJSON{ID: r.ID, ConversationID: r.ConversationID, RunID: r.RunID,
			ToolCallID: u.ToolCallID, Tool: u.Tool, Args: u.Args, Status: r.Status, Decision: DecisionOf(r.Status),
			CreatedAt: r.CreatedAt, ResolvedAt: r.ResolvedAt,
			expiryJSON: expiryJSON{ExpiresAt: r.ExpiresAt, OnExpiry: r.OnExpiry, TimedOut: r.TimedOut}})
	}
	return nil, fmt.Errorf("%w: human request %s has no kind %q", ErrInvalid, r.ID, r.Kind)
}

// NewHumanRequest is what CreateHumanRequest needs: what is asked, in the
// part of its Kind (answer fields there are ignored).
type NewHumanRequest struct {
	ID            string // "" for a fresh one
	Kind          events.PendingKind
	RunID         string        // required
	Approval      Approval      // Tool required; Args a JSON object, nil means {}
	Elicitation   Elicitation   // Schema a JSON object, nil means {}
	Clarification Clarification // Question required
	UncertainCall UncertainCall // Tool required; Args a JSON object, nil means {}
	// ExpiresAt is a deadline, with what happens then in OnExpiry
	// (required with it, one of events.ExpiryOutcomes of the kind); nil
	// waits for ever.
	ExpiresAt *time.Time
	OnExpiry  events.ExpiryOutcome
}

// Validate reports an ErrInvalid error for a request that cannot be
// stored.
func (n NewHumanRequest) Validate() error {
	if n.RunID == "" {
		return fmt.Errorf("%w: run id is required", ErrInvalid)
	}
	switch {
	case n.ExpiresAt == nil && n.OnExpiry != "":
		return fmt.Errorf("%w: an outcome at expiry needs a deadline", ErrInvalid)
	case n.ExpiresAt != nil:
		if !slices.Contains(events.ExpiryOutcomes(n.Kind), n.OnExpiry) {
			_, err := events.ParseExpiryOutcome(n.Kind, string(n.OnExpiry))
			return fmt.Errorf("%w: %w", ErrInvalid, cmp.Or(err, fmt.Errorf("an outcome at expiry is required")))
		}
	}
	switch n.Kind {
	case events.PendingApproval:
		a := n.Approval
		switch {
		case a.Tool == "":
			return fmt.Errorf("%w: tool is required", ErrInvalid)
		case a.Args != nil && !isObject(a.Args):
			return fmt.Errorf("%w: args of %s are not a JSON object", ErrInvalid, a.Tool)
		case a.Revision < 0:
			return fmt.Errorf("%w: revision %d is negative", ErrInvalid, a.Revision)
		}
		return checkText("approval id", n.ID, "tool call id", a.ToolCallID, "tool", a.Tool)
	case events.PendingElicitation:
		e := n.Elicitation
		if e.Schema != nil && !isObject(e.Schema) {
			return fmt.Errorf("%w: schema is not a JSON object", ErrInvalid)
		}
		return checkText("elicitation id", n.ID, "source", e.Source, "message", e.Message)
	case events.PendingClarification:
		if n.Clarification.Question == "" {
			return fmt.Errorf("%w: question is required", ErrInvalid)
		}
		return checkText("clarification id", n.ID, "question", n.Clarification.Question)
	case events.PendingUncertainCall:
		u := n.UncertainCall
		switch {
		case n.ID == "":
			return fmt.Errorf("%w: an uncertain call's id is its idempotency key, which is required", ErrInvalid)
		case u.Tool == "":
			return fmt.Errorf("%w: tool is required", ErrInvalid)
		case u.Args != nil && !isObject(u.Args):
			return fmt.Errorf("%w: args of %s are not a JSON object", ErrInvalid, u.Tool)
		}
		return checkText("uncertain call id", n.ID, "tool call id", u.ToolCallID, "tool", u.Tool)
	}
	return fmt.Errorf("%w: kind %q is not approval, elicitation, clarification or uncertain_call", ErrInvalid, n.Kind)
}

// HumanAnswer is a human's answer to a request of its Kind: an
// ApprovalAnswer, an ElicitationAnswer or a CallAnswer.
type HumanAnswer interface {
	// Kind is the kind of request the answer is for.
	Kind() events.PendingKind
	// Validate reports an ErrInvalid error for an answer that cannot be
	// recorded.
	Validate() error
	// Status is the status a request answered so takes.
	Status() HumanStatus
}

var (
	_ HumanAnswer = DeadlineAnswer{}
	_ HumanAnswer = ApprovalAnswer{}
	_ HumanAnswer = ElicitationAnswer{}
	_ HumanAnswer = CallAnswer{}
)

// DeadlineAnswer is what a request's deadline decides when nobody
// answered it in time: the request's OnExpiry. It resolves the request as
// a person's answer does, so that of it and a person's answer exactly one
// wins, and marks it TimedOut: an approval's approve or reject are
// recorded as those decisions (approved, rejected), an elicitation's
// decline as declined, a clarification's continue as answered (with no
// answer), an uncertain call's skip or fail as skipped or failed, and
// cancel, of any, as expired.
type DeadlineAnswer struct {
	// Of is the kind of the request; "" is events.PendingApproval, the
	// first kind with deadlines.
	Of      events.PendingKind
	Outcome events.ExpiryOutcome
}

// Kind is the kind of the request the deadline decides.
func (a DeadlineAnswer) Kind() events.PendingKind { return cmp.Or(a.Of, events.PendingApproval) }

// Validate reports an ErrInvalid error for an outcome that is none of
// the kind's.
func (a DeadlineAnswer) Validate() error {
	if a.Status() == "" {
		return fmt.Errorf("%w: outcome at expiry %q is none of a %s's", ErrInvalid, a.Outcome, a.Kind())
	}
	return nil
}

// Status is the status a request decided by its deadline takes.
func (a DeadlineAnswer) Status() HumanStatus {
	if !slices.Contains(events.ExpiryOutcomes(a.Kind()), a.Outcome) {
		return ""
	}
	switch a.Outcome {
	case events.ExpiryApprove:
		return HumanApproved
	case events.ExpiryReject:
		return HumanRejected
	case events.ExpiryDecline:
		return HumanDeclined
	case events.ExpiryContinue:
		return HumanAnswered
	case events.ExpirySkip:
		return HumanSkipped
	case events.ExpiryFail:
		return HumanFailed
	}
	return HumanExpired
}

// Decision is the decision an approval decided by its deadline records;
// "" for a cancel, and for other kinds.
func (a DeadlineAnswer) Decision() events.DecisionKind {
	switch a.Outcome {
	case events.ExpiryApprove:
		return events.DecisionApprove
	case events.ExpiryReject:
		return events.DecisionReject
	}
	return ""
}

// ApprovalAnswer is a human's decision on an approval.
type ApprovalAnswer struct {
	Decision events.DecisionKind
	// Args are the edited arguments, a JSON object; required with edit
	// and ignored otherwise.
	Args   json.RawMessage
	Reason string
}

// Kind is events.PendingApproval.
func (ApprovalAnswer) Kind() events.PendingKind { return events.PendingApproval }

// Validate reports an ErrInvalid error for an answer that cannot be
// recorded.
func (a ApprovalAnswer) Validate() error {
	switch a.Decision {
	case events.DecisionApprove, events.DecisionReject:
		return checkText("reason", a.Reason)
	case events.DecisionEdit:
		if !isObject(a.Args) {
			return fmt.Errorf("%w: an edit needs its args as a JSON object", ErrInvalid)
		}
		return checkText("reason", a.Reason)
	}
	return fmt.Errorf("%w: decision %q is not approve, edit or reject", ErrInvalid, a.Decision)
}

// Status is the status an approval answered so takes; "" for an unknown
// decision.
func (a ApprovalAnswer) Status() HumanStatus { return approvalStatuses[a.Decision] }

var approvalStatuses = map[events.DecisionKind]HumanStatus{
	events.DecisionApprove: HumanApproved,
	events.DecisionEdit:    HumanEdited,
	events.DecisionReject:  HumanRejected,
}

// ElicitationAnswer is the user's answer to an elicitation.
type ElicitationAnswer struct {
	Action events.ElicitAction
	// Content is the requested object, with accept; ignored otherwise.
	Content json.RawMessage
}

// Kind is events.PendingElicitation.
func (ElicitationAnswer) Kind() events.PendingKind { return events.PendingElicitation }

// Validate reports an ErrInvalid error for an answer that cannot be
// recorded.
func (a ElicitationAnswer) Validate() error {
	switch a.Action {
	case events.ElicitAccept:
		if a.Content != nil && !isObject(a.Content) {
			return fmt.Errorf("%w: content is not a JSON object", ErrInvalid)
		}
		return nil
	case events.ElicitDecline, events.ElicitCancel:
		return nil
	}
	return fmt.Errorf("%w: action %q is not accept, decline or cancel", ErrInvalid, a.Action)
}

// Status is the status an elicitation answered so takes; "" for an
// unknown action.
func (a ElicitationAnswer) Status() HumanStatus { return elicitationStatuses[a.Action] }

var elicitationStatuses = map[events.ElicitAction]HumanStatus{
	events.ElicitAccept:  HumanAccepted,
	events.ElicitDecline: HumanDeclined,
	events.ElicitCancel:  HumanCancelled,
}

// CallAnswer is a human's decision on an uncertain call.
type CallAnswer struct {
	Decision events.CallDecision
}

// Kind is events.PendingUncertainCall.
func (CallAnswer) Kind() events.PendingKind { return events.PendingUncertainCall }

// Validate reports an ErrInvalid error for an answer that cannot be
// recorded.
func (a CallAnswer) Validate() error {
	if a.Status() == "" {
		return fmt.Errorf("%w: decision %q is not retry, skip or fail", ErrInvalid, a.Decision)
	}
	return nil
}

// Status is the status an uncertain call answered so takes; "" for an
// unknown decision.
func (a CallAnswer) Status() HumanStatus { return callStatuses[a.Decision] }

// DecisionOf is the decision an uncertain call's status records; "" while
// it is pending or expired.
func DecisionOf(s HumanStatus) events.CallDecision { return answerOf(callStatuses, s) }

// ActionOf is the action an elicitation's status records; "" while it is
// pending or expired.
func ActionOf(s HumanStatus) events.ElicitAction { return answerOf(elicitationStatuses, s) }

// answerOf reads a table of answers' statuses backwards: the answer that
// records s, or "".
func answerOf[A ~string](statuses map[A]HumanStatus, s HumanStatus) A {
	for a, st := range statuses {
		if st == s {
			return a
		}
	}
	return ""
}

// callStatuses are the statuses uncertain calls' decisions record, one
// each: read both ways, by Status and DecisionOf. approvalStatuses and
// elicitationStatuses are the same for the other kinds.
var callStatuses = map[events.CallDecision]HumanStatus{
	events.CallRetry: HumanRetried,
	events.CallSkip:  HumanSkipped,
	events.CallFail:  HumanFailed,
}
