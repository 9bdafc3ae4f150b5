package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// PendingInterrupt is a pause point of a run, waiting for a resume value.
type PendingInterrupt struct {
	// ID answers this interrupt through RunConfig.ResumeByID. Stable across
	// re-runs of the task, and unique in the thread.
	ID string `json:"id"`
	// Node is the node that paused (the node about to run or just run, for
	// static interrupts).
	Node      string `json:"node"`
	TaskID    string `json:"task_id,omitempty"`
	Namespace string `json:"ns,omitempty"`
	// Payload is the JSON of what the node passed to Interrupt.
	Payload json.RawMessage `json:"payload,omitempty"`
	// When is "before" or "after" for static interrupts, "" for Interrupt.
	When string `json:"when,omitempty"`
}

func (in PendingInterrupt) String() string {
	if in.When != "" {
		return fmt.Sprintf("%s node %s", in.When, in.Node)
	}
	return fmt.Sprintf("node %s asks %s (id %s)", in.Node, in.Payload, in.ID)
}

// Interrupt pauses the run inside a node until the thread is continued
// with a resume value, which it then returns, decoded into R.
//
// The first call stops the run: it returns an error the node must return
// (anything the node returns instead is discarded). When the thread is
// continued with a value for this interrupt, the node runs again from its
// start and this call returns the value. A node may call Interrupt several
// times; each call is matched with its answer by order, so a node must
// make its calls in the same order every time it runs. Work done before an
// Interrupt runs again on resume: keep it idempotent.
//
// Interrupts need a checkpointer and a thread id.
func Interrupt[R any](ctx context.Context, payload any) (R, error) {
	var zero R
	t := taskFrom(ctx)
	if t == nil {
		return zero, errors.New("graph: Interrupt called outside a running node")
	}
	raw, err := t.interrupt(payload)
	if err != nil {
		return zero, err
	}
	var v R
	if err := json.Unmarshal(raw, &v); err != nil {
		return zero, fmt.Errorf("graph: decode resume value as %T: %w", zero, err)
	}
	return v, nil
}

// Resumed reports whether the node's next Interrupt call has its answer
// already, so it would return at once rather than pause. A node that
// pauses only after some work, and must know on resume what the answer
// says before doing that work again, asks Resumed first and calls
// Interrupt (with any payload) only when it is true.
func Resumed(ctx context.Context) bool {
	t := taskFrom(ctx)
	return t != nil && t.resumed()
}

// taskHandle is what the package-level helpers reach through a node's
// context; the generic task implements it.
type taskHandle interface {
	emit(mode Mode, data any) error
	interrupt(payload any) (json.RawMessage, error)
	resumed() bool
	childLink(ctx context.Context) *parentLink
}

type taskKey struct{}

// taskCtx is the context a node runs with: the run's context plus its
// task. It lives inside the task, so starting a node allocates nothing.
// It holds the task by its own type, a word smaller than a taskHandle.
type taskCtx[S any] struct {
	context.Context
	t *task[S]
}

func (c *taskCtx[S]) Value(key any) any {
	if key == (taskKey{}) {
		return c.t
	}
	return c.Context.Value(key)
}

func taskFrom(ctx context.Context) taskHandle {
	t, _ := ctx.Value(taskKey{}).(taskHandle)
	return t
}

func (t *task[S]) interrupt(payload any) (json.RawMessage, error) {
	r := t.r
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.nInterrupt
	t.nInterrupt++
	id := hashID(r.nsKey, t.id, fmt.Sprint(k))
	if v, ok := r.resume[id]; ok {
		return v, nil
	}
	if r.saver == nil {
		return nil, fmt.Errorf("graph: Interrupt in node %s: %w", t.label(), ErrNoCheckpointer)
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("graph: encode interrupt payload of %s: %w", t.label(), err)
	}
	in := PendingInterrupt{ID: id, Node: t.node.spec.name, TaskID: t.id, Namespace: r.nsKey, Payload: raw}
	x := t.more()
	x.interrupts = append(x.interrupts, in)
	return nil, &InterruptError{Interrupts: []PendingInterrupt{in}}
}

func (t *task[S]) resumed() bool {
	r := t.r
	if len(r.resume) == 0 { // most runs: no id to hash
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := r.resume[hashID(r.nsKey, t.id, fmt.Sprint(t.nInterrupt))]
	return ok
}
