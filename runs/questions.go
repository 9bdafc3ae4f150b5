package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/operators"
)

// DefaultTimeout is how long an elicitation waits for the user unless
// [Config.Timeout] says otherwise.
const DefaultTimeout = 5 * time.Minute

// Errors from [Manager.Respond] and [Manager.Cancel]; match them with
// errors.Is. The service maps them to 404, 409 and 422.
var (
	// ErrNotFound: no elicitation by that id, or it belongs to another
	// user.
	ErrNotFound = errors.New("elicit: no such elicitation")
	// ErrResolved: the elicitation was already answered, cancelled or timed
	// out.
	ErrResolved = errors.New("elicit: elicitation already resolved")
	// ErrInvalidContent: accepted content does not satisfy the requested
	// schema; the elicitation stays pending. The error is a
	// *ValidationError.
	ErrInvalidContent = errors.New("elicit: content does not match the requested schema")
	// ErrInvalidAction: the action is not accept, decline or cancel.
	ErrInvalidAction = errors.New("elicit: action must be accept, decline or cancel")
)

// ValidationError says why accepted content was refused. It matches
// [ErrInvalidContent].
type ValidationError struct {
	ElicitationID string
	// Reason is the validator's message, e.g. `required: missing
	// properties: ["name"]`.
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("elicit: %s: content does not match the requested schema: %s", e.ElicitationID, e.Reason)
}

func (e *ValidationError) Unwrap() error { return ErrInvalidContent }

// Config configures a [Manager]. The zero value works.
type Config struct {
	// Timeout is how long a request waits for an answer before it is
	// cancelled. Default [DefaultTimeout] (5 minutes).
	Timeout time.Duration
	// Logger hears timeouts and schemas that cannot be used for
	// validation; nil discards.
	Logger *slog.Logger
}

// Request is one question for the user.
type Request struct {
	// ElicitRequest carries the id (assigned when empty), the asking tool
	// (Source), the message and the schema of the object asked for. A nil
	// schema accepts any object.
	operators.ElicitRequest
	// ConversationID, UserID and ToolCallID say whose question it is.
	// UserID owns it: Respond, Cancel and Pending called with another
	// non-empty user do not see it.
	ConversationID string
	UserID         string
	ToolCallID     string
	// Timeout overrides [Config.Timeout] for this request when positive.
	Timeout time.Duration
}

// Pending is an elicitation waiting for its answer, as
// GET /api/v1/elicitation/pending lists it. Its JSON is a superset of
// API.md's elicitation.request payload.
type Pending struct {
	ElicitationID  string             `json:"elicitation_id"`
	ConversationID string             `json:"conversation_id,omitempty"`
	ToolCallID     string             `json:"tool_call_id,omitempty"`
	Source         string             `json:"source"`
	Message        string             `json:"message"`
	Schema         *jsonschema.Schema `json:"schema"`
	CreatedAt      time.Time          `json:"created_at"`
	ExpiresAt      time.Time          `json:"expires_at"`
	UserID         string             `json:"-"`
}

// Reason says how an elicitation ended.
type Reason string

const (
	ReasonAnswered  Reason = "answered"  // Respond
	ReasonCancelled Reason = "cancelled" // Cancel
	ReasonTimeout   Reason = "timeout"   // nobody answered in time
	ReasonAbandoned Reason = "abandoned" // the asker's context ended (run cancelled)
)

// Resolution is how an elicitation ended: API.md's elicitation.response
// payload plus the reason.
type Resolution struct {
	ElicitationID string                 `json:"elicitation_id"`
	Action        operators.ElicitAction `json:"action"`
	Reason        Reason                 `json:"reason"`
}

// Hooks hear one request's life; the service turns them into API.md's
// events on the run's stream. Nil funcs are skipped.
type Hooks struct {
	// Requested is called once the request is pending, so an answer can
	// already be accepted, and before Ask waits: emit elicitation.request
	// here. An error withdraws the request and Ask returns it.
	Requested func(ctx context.Context, p Pending) error
	// Resolved is called once with the outcome, from the asking goroutine:
	// emit elicitation.response here. Its ctx is never cancelled.
	Resolved func(ctx context.Context, r Resolution)
}

// Manager holds elicitations while they wait for the user: it lists them,
// takes answers (validating accepted content against the requested
// schema), cancels them, and cancels those nobody answers in time. It is a
// value, not a global; safe for concurrent use. The zero Manager is not
// usable; call [NewManager].
type Manager struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	pending  map[string]*entry
	resolved map[string]time.Time // id → when the tombstone expires (for ErrResolved)
}

type entry struct {
	p      Pending
	schema *jsonschema.Resolved // nil: any object
	answer chan answer
}

// answer is what Respond or Cancel hands to the waiting Ask.
type answer struct {
	resp   operators.ElicitResponse
	reason Reason
}

// NewManager returns an empty manager.
func NewManager(cfg Config) *Manager {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, log: log, pending: map[string]*entry{}, resolved: map[string]time.Time{}}
}

// Timeout is the default wait.
func (m *Manager) Timeout() time.Duration { return m.cfg.Timeout }

// Ask registers r, calls h.Requested, and waits until the user answers
// (Respond), the elicitation is cancelled (Cancel), it times out, or ctx
// ends; then it calls h.Resolved.
//
// The answer is returned with a nil error, a cancel or a timeout as a
// response whose Action is cancel. When ctx ends first, Ask returns a
// cancel response and an error wrapping ctx's error. Accepted content has
// already been validated against r.Schema.
func (m *Manager) Ask(ctx context.Context, r Request, h Hooks) (operators.ElicitResponse, error) {
	if r.ElicitationID == "" {
		r.ElicitationID = ids.Random("el_", 16)
	}
	id := r.ElicitationID
	timeout := m.cfg.Timeout
	if r.Timeout > 0 {
		timeout = r.Timeout
	}
	now := time.Now()
	e := &entry{
		p: Pending{
			ElicitationID: id, ConversationID: r.ConversationID, ToolCallID: r.ToolCallID, UserID: r.UserID,
			Source: r.Source, Message: r.Message, Schema: r.Schema, CreatedAt: now.UTC(), ExpiresAt: now.Add(timeout).UTC(),
		},
		answer: make(chan answer, 1),
	}
	if r.Schema != nil {
		rs, err := r.Schema.Resolve(nil)
		if err != nil {
			m.log.LogAttrs(ctx, slog.LevelWarn, "elicitation schema does not resolve; answers are checked to be objects only",
				slog.String("elicitation_id", id), slog.String("source", r.Source), slog.Any("error", err))
		}
		e.schema = rs
	}
	m.mu.Lock()
	if _, dup := m.pending[id]; dup {
		m.mu.Unlock()
		return operators.ElicitResponse{ElicitationID: id, Action: operators.ElicitCancel}, fmt.Errorf("elicit: ask: id %s is already pending", id)
	}
	m.pending[id] = e
	m.mu.Unlock()

	resolve := func(a answer) operators.ElicitResponse {
		resp, reason := a.resp, a.reason
		resp.ElicitationID = id
		if h.Resolved != nil {
			h.Resolved(context.WithoutCancel(ctx), Resolution{ElicitationID: id, Action: resp.Action, Reason: reason})
		}
		return resp
	}
	if h.Requested != nil {
		if err := h.Requested(ctx, e.p); err != nil {
			if !m.withdraw(id) {
				return resolve(<-e.answer), nil // answered before the announcement failed
			}
			return operators.ElicitResponse{ElicitationID: id, Action: operators.ElicitCancel}, fmt.Errorf("elicit: announce %s: %w", id, err)
		}
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-e.answer:
		return resolve(a), nil
	case <-timer.C:
		if !m.withdraw(id) {
			return resolve(<-e.answer), nil
		}
		m.log.LogAttrs(ctx, slog.LevelInfo, "elicitation timed out", slog.String("elicitation_id", id),
			slog.String("source", r.Source), slog.Duration("timeout", timeout))
		return resolve(answer{operators.ElicitResponse{Action: operators.ElicitCancel}, ReasonTimeout}), nil
	case <-ctx.Done():
		if !m.withdraw(id) {
			return resolve(<-e.answer), nil
		}
		resp := resolve(answer{operators.ElicitResponse{Action: operators.ElicitCancel}, ReasonAbandoned})
		return resp, fmt.Errorf("elicit: %s: %w", id, context.Cause(ctx))
	}
}

// withdraw removes a still pending id and records it as resolved. It
// reports false when the id was already answered (its answer is then in
// the entry's channel).
func (m *Manager) withdraw(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pending[id]; !ok {
		return false
	}
	delete(m.pending, id)
	m.tombstoneLocked(id)
	return true
}

func (m *Manager) tombstoneLocked(id string) {
	now := time.Now()
	for k, exp := range m.resolved { // prune lazily; the map holds at most one timeout's worth
		if now.After(exp) {
			delete(m.resolved, k)
		}
	}
	m.resolved[id] = now.Add(m.cfg.Timeout)
}

// lookupLocked finds a pending elicitation for user ("" matches any).
func (m *Manager) lookupLocked(user, id string) (*entry, error) {
	e, ok := m.pending[id]
	if !ok {
		if _, done := m.resolved[id]; done {
			return nil, fmt.Errorf("%w: %s", ErrResolved, id)
		}
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if user != "" && e.p.UserID != "" && e.p.UserID != user {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return e, nil
}

// Respond answers the elicitation resp.ElicitationID on behalf of user
// ("" skips the owner check; use it only from trusted code). An accept
// must carry a JSON object that satisfies the requested schema; decline
// and cancel carry no content. Errors: [ErrNotFound], [ErrResolved],
// [ErrInvalidAction], and a *[ValidationError] (matching
// [ErrInvalidContent]) after which the elicitation is still pending.
func (m *Manager) Respond(user string, resp operators.ElicitResponse) error {
	id := resp.ElicitationID
	switch resp.Action {
	case operators.ElicitAccept:
	case operators.ElicitDecline, operators.ElicitCancel:
		resp.Content = nil
	default:
		return fmt.Errorf("%w, got %q", ErrInvalidAction, resp.Action)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookupLocked(user, id)
	if err != nil {
		return err
	}
	if resp.Action == operators.ElicitAccept {
		if err := validate(e, resp.Content); err != nil {
			return err
		}
	}
	delete(m.pending, id)
	m.tombstoneLocked(id)
	e.answer <- answer{resp, ReasonAnswered}
	return nil
}

// Cancel cancels the elicitation id for user ("" skips the owner check):
// the waiting tool sees a cancel. Errors: [ErrNotFound], [ErrResolved].
func (m *Manager) Cancel(user, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookupLocked(user, id)
	if err != nil {
		return err
	}
	delete(m.pending, id)
	m.tombstoneLocked(id)
	e.answer <- answer{operators.ElicitResponse{ElicitationID: id, Action: operators.ElicitCancel}, ReasonCancelled}
	return nil
}

// Pending lists the elicitations waiting for user ("" lists every user's)
// in conversationID ("" lists every conversation's), oldest first.
func (m *Manager) Pending(user, conversationID string) []Pending {
	m.mu.Lock()
	out := make([]Pending, 0, len(m.pending))
	for _, e := range m.pending {
		if (user == "" || e.p.UserID == "" || e.p.UserID == user) && (conversationID == "" || e.p.ConversationID == conversationID) {
			out = append(out, e.p)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Pending) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ElicitationID, b.ElicitationID)
	})
	return out
}
