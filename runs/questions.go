package runs

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
)

// DefaultElicitTimeout is how long a tool's question waits for the user
// unless Config.ElicitTimeout says otherwise.
const DefaultElicitTimeout = 5 * time.Minute

// The content of an accept that does not fit its question's schema.
var (
	// ErrInvalidContent: accepted content does not satisfy the requested
	// schema; the question stays pending. The error is a
	// *ValidationError, and an ErrInvalid.
	ErrInvalidContent = fmt.Errorf("runs: content does not match the requested schema: %w", store.ErrInvalid)
	// errInvalidAction: the action is not accept, decline or cancel; an
	// ErrInvalid.
	errInvalidAction = fmt.Errorf("runs: action must be accept, decline or cancel: %w", store.ErrInvalid)
)

// ValidationError says why accepted content was refused. It matches
// ErrInvalidContent.
type ValidationError struct {
	ElicitationID string
	// Reason is the validator's message, e.g. `required: missing
	// properties: ["name"]`.
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("runs: elicitation %s: content does not match the requested schema: %s", e.ElicitationID, e.Reason)
}

func (e *ValidationError) Unwrap() error { return ErrInvalidContent }

// question is one question for the user.
type question struct {
	// ElicitRequest carries the id (assigned when empty), the asking tool
	// (Source), the message and the schema of the object asked for. A nil
	// schema accepts any object.
	operators.ElicitRequest
	// ConversationID and UserID say whose question it is. UserID owns
	// it: respond and cancel called with another non-empty user do not
	// see it.
	ConversationID string
	UserID         string
}

// asked is a question waiting for its answer.
type asked struct {
	ElicitationID  string
	ConversationID string
	Source         string
	Message        string
	Schema         *jsonschema.Schema
	CreatedAt      time.Time
	ExpiresAt      time.Time
	UserID         string
}

// reason says how a question ended.
type reason string

const (
	reasonAnswered  reason = "answered"  // respond
	reasonCancelled reason = "cancelled" // cancel
	reasonTimeout   reason = "timeout"   // nobody answered in time
	reasonAbandoned reason = "abandoned" // the asker's context ended (run cancelled)
)

// resolution is how a question ended.
type resolution struct {
	ElicitationID string
	Action        events.ElicitAction
	Reason        reason
}

// questionHooks hear one question's life. Nil funcs are skipped.
type questionHooks struct {
	// Requested is called once the question is pending, so an answer can
	// already be accepted, and before ask waits. An error withdraws the
	// question and ask returns it.
	Requested func(ctx context.Context, p asked) error
	// Resolved is called once with the outcome, from the asking
	// goroutine. Its ctx is never cancelled.
	Resolved func(ctx context.Context, r resolution)
}

// questions is the waiting room of the tools' questions that this
// process's runs ask while a stream follows them: it takes answers
// (checking accepted content against the requested schema), cancels
// questions, and cancels those nobody answers in time. What outlives
// the wait is the store's (see elicitor).
type questions struct {
	timeout time.Duration
	log     *slog.Logger

	mu       sync.Mutex
	pending  map[string]*entry
	resolved map[string]tombstone // id → what left the room (for store.ErrAlreadyResolved)
}

// tombstone is a question that left the waiting room: until expires,
// its id is ErrAlreadyResolved rather than ErrNotFound. answered: a
// person's answer (or cancel) was handed to the tool, which the record
// shows once the answer's caller stores it; otherwise the question was
// withdrawn (its wait ended), for the record to decide.
type tombstone struct {
	expires  time.Time
	answered bool
}

type entry struct {
	p      asked
	schema *jsonschema.Resolved // nil: any object
	answer chan answer
	taken  chan struct{} // closed by take: no answer comes, the run is being cancelled
}

// answer is what respond or cancel hands to the waiting ask.
type answer struct {
	resp   operators.ElicitResponse
	reason reason
}

// newQuestions returns an empty waiting room whose questions wait for
// timeout (0: DefaultElicitTimeout).
func newQuestions(timeout time.Duration, log *slog.Logger) *questions {
	if timeout <= 0 {
		timeout = DefaultElicitTimeout
	}
	return &questions{timeout: timeout, log: log, pending: map[string]*entry{}, resolved: map[string]tombstone{}}
}

// ask registers r, calls h.Requested, and waits until the user answers
// (respond), the question is cancelled (cancel), it times out, or ctx
// ends; then it calls h.Resolved.
//
// The answer is returned with a nil error, a cancel or a timeout as a
// response whose Action is cancel. When ctx ends first, ask returns a
// cancel response and an error wrapping ctx's error. Accepted content has
// already been validated against r.Schema.
func (m *questions) ask(ctx context.Context, r question, h questionHooks) (operators.ElicitResponse, error) {
	if r.ElicitationID == "" {
		r.ElicitationID = ids.Random("el_", 16)
	}
	id := r.ElicitationID
	timeout := m.timeout
	now := time.Now()
	e := &entry{
		p: asked{
			ElicitationID: id, ConversationID: r.ConversationID, UserID: r.UserID,
			Source: r.Source, Message: r.Message, Schema: r.Schema, CreatedAt: now.UTC(), ExpiresAt: now.Add(timeout).UTC(),
		},
		answer: make(chan answer, 1),
		taken:  make(chan struct{}),
	}
	if r.Schema != nil {
		rs, err := r.Schema.Resolve(nil)
		if err != nil {
			m.log.LogAttrs(ctx, slog.LevelWarn, "an elicitation's schema does not resolve; answers are checked to be objects only",
				slog.String("elicitation_id", id), slog.String("source", r.Source), slog.Any("error", err))
		}
		e.schema = rs
	}
	m.mu.Lock()
	if _, dup := m.pending[id]; dup {
		m.mu.Unlock()
		return operators.ElicitResponse{ElicitationID: id, Action: events.ElicitCancel}, fmt.Errorf("runs: ask: elicitation %s is already pending", id)
	}
	m.pending[id] = e
	m.mu.Unlock()

	resolve := func(a answer) operators.ElicitResponse {
		resp, reason := a.resp, a.reason
		resp.ElicitationID = id
		if h.Resolved != nil {
			h.Resolved(context.WithoutCancel(ctx), resolution{ElicitationID: id, Action: resp.Action, Reason: reason})
		}
		return resp
	}
	if h.Requested != nil {
		if err := h.Requested(ctx, e.p); err != nil {
			if !m.withdraw(id) {
				return resolve(<-e.answer), nil // answered before the announcement failed
			}
			return operators.ElicitResponse{ElicitationID: id, Action: events.ElicitCancel}, fmt.Errorf("runs: announce elicitation %s: %w", id, err)
		}
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-e.answer:
		return resolve(a), nil
	case <-timer.C:
		if !m.withdraw(id) {
			return m.settled(ctx, e, resolve)
		}
		m.log.LogAttrs(ctx, slog.LevelInfo, "elicitation timed out", slog.String("elicitation_id", id),
			slog.String("source", r.Source), slog.Duration("timeout", timeout))
		return resolve(answer{operators.ElicitResponse{Action: events.ElicitCancel}, reasonTimeout}), nil
	case <-ctx.Done():
		if !m.withdraw(id) {
			return m.settled(ctx, e, resolve)
		}
		resp := resolve(answer{operators.ElicitResponse{Action: events.ElicitCancel}, reasonAbandoned})
		return resp, fmt.Errorf("runs: elicitation %s: %w", id, context.Cause(ctx))
	}
}

// settled is how a question that left the room as ask gave up on it
// ended: the answer respond or cancel handed it, or, when take took it,
// the end of ctx (take's caller cancels the run), as a cancel with ctx's
// error.
func (m *questions) settled(ctx context.Context, e *entry, resolve func(answer) operators.ElicitResponse) (operators.ElicitResponse, error) {
	select {
	case a := <-e.answer:
		return resolve(a), nil
	case <-e.taken:
	}
	<-ctx.Done()
	resp := resolve(answer{operators.ElicitResponse{Action: events.ElicitCancel}, reasonAbandoned})
	return resp, fmt.Errorf("runs: elicitation %s: %w", e.p.ElicitationID, context.Cause(ctx))
}

// withdraw removes a still pending id and records it as resolved. It
// reports false when the id was already answered (its answer is then in
// the entry's channel).
func (m *questions) withdraw(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pending[id]; !ok {
		return false
	}
	delete(m.pending, id)
	m.tombstoneLocked(id, false)
	return true
}

func (m *questions) tombstoneLocked(id string, answered bool) {
	now := time.Now()
	for k, t := range m.resolved { // prune lazily; the map holds at most one timeout's worth
		if now.After(t.expires) {
			delete(m.resolved, k)
		}
	}
	m.resolved[id] = tombstone{expires: now.Add(m.timeout), answered: answered}
}

// answered reports whether the question id left the room with an answer
// or a cancel handed to its tool, rather than withdrawn.
func (m *questions) answered(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resolved[id].answered
}

// lookupLocked finds a pending question for user ("" matches any).
func (m *questions) lookupLocked(user, id string) (*entry, error) {
	e, ok := m.pending[id]
	if !ok {
		if _, done := m.resolved[id]; done {
			return nil, fmt.Errorf("runs: elicitation %s: %w", id, store.ErrAlreadyResolved)
		}
		return nil, fmt.Errorf("runs: elicitation %s: %w", id, store.ErrNotFound)
	}
	if user != "" && e.p.UserID != "" && e.p.UserID != user {
		return nil, fmt.Errorf("runs: elicitation %s: %w", id, store.ErrNotFound)
	}
	return e, nil
}

// respond answers the question resp.ElicitationID on behalf of user
// ("" skips the owner check; use it only from trusted code). An accept
// must carry a JSON object that satisfies the requested schema; decline
// and cancel carry no content. Errors: store.ErrNotFound,
// store.ErrAlreadyResolved, errInvalidAction, and a *ValidationError
// (matching ErrInvalidContent) after which the question is still
// pending.
func (m *questions) respond(user string, resp operators.ElicitResponse) error {
	id := resp.ElicitationID
	switch resp.Action {
	case events.ElicitAccept:
	case events.ElicitDecline, events.ElicitCancel:
		resp.Content = nil
	default:
		return fmt.Errorf("%w, got %q", errInvalidAction, resp.Action)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookupLocked(user, id)
	if err != nil {
		return err
	}
	if resp.Action == events.ElicitAccept {
		if err := validate(e, resp.Content); err != nil {
			return err
		}
	}
	delete(m.pending, id)
	m.tombstoneLocked(id, true)
	e.answer <- answer{resp, reasonAnswered}
	return nil
}

// cancel cancels the question id for user ("" skips the owner check):
// the waiting tool sees a cancel. Errors: store.ErrNotFound,
// store.ErrAlreadyResolved.
func (m *questions) cancel(user, id string) error {
	e, err := m.remove(user, id)
	if err != nil {
		return err
	}
	e.answer <- answer{operators.ElicitResponse{ElicitationID: id, Action: events.ElicitCancel}, reasonCancelled}
	return nil
}

// remove takes the pending question id of user out of the room and
// records it as resolved here (a cancel or a deadline's: an answer that
// comes after it loses); its caller tells the waiting ask.
func (m *questions) remove(user, id string) (*entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookupLocked(user, id)
	if err != nil {
		return nil, err
	}
	delete(m.pending, id)
	m.tombstoneLocked(id, true)
	return e, nil
}

// waiting reports whether the question id of user waits here.
func (m *questions) waiting(user, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.lookupLocked(user, id)
	return err == nil
}

// take removes the question id of user ("" skips the owner check) with
// no answer: the waiting tool hears nothing until its run's context
// ends, which the caller brings about. It lets a deadline cancel the run
// before the tool can see its question cancelled. Errors:
// store.ErrNotFound, store.ErrAlreadyResolved.
func (m *questions) take(user, id string) error {
	e, err := m.remove(user, id)
	if err != nil {
		return err
	}
	close(e.taken)
	return nil
}
