package graph

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/failsafe-go/failsafe-go"
)

// call, attempts and attempt keep the common path's frames small: a task
// runs in a fresh goroutine, whose stack would otherwise grow (and be
// copied) for the cache and retry machinery on every step.
func (t *task[S]) call() (Command[S], error) {
	if t.node.cache != nil {
		return t.cached()
	}
	return t.attempts()
}

func (t *task[S]) cached() (Command[S], error) {
	c := t.node.cache
	key, err := cacheKey(&t.input)
	if err != nil {
		return Command[S]{}, err
	}
	if cmd, ok := c.get(key, time.Now()); ok {
		return cmd, nil
	}
	cmd, err := t.attempts()
	if err == nil && len(t.pending()) == 0 {
		c.put(key, cmd, time.Now())
	}
	return cmd, err
}

func (t *task[S]) attempts() (Command[S], error) {
	if t.node.spec.opts.retry != nil {
		return t.retried()
	}
	return t.attempt(t.ctx)
}

func (t *task[S]) retried() (Command[S], error) {
	p := t.node.spec.opts.retry
	var cmd Command[S]
	_, err := failsafe.With[any](p).WithContext(t.ctx).GetWithExecution(func(e failsafe.Execution[any]) (any, error) {
		c, err := t.attempt(e.Context())
		if len(t.pending()) > 0 {
			return nil, nil // a pause is not a failure to retry
		}
		cmd = c
		return nil, err
	})
	return cmd, err
}

func (t *task[S]) attempt(ctx context.Context) (Command[S], error) {
	t.mu.Lock()
	t.nInterrupt = 0
	if t.x != nil {
		t.x.interrupts = nil
	}
	t.mu.Unlock()
	if d := t.node.spec.opts.timeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	return t.invoke(ctx)
}

// invoke calls the node, turning a panic into an error. A plain node is
// called directly, without the Command wrapper's extra frame.
func (t *task[S]) invoke(ctx context.Context) (cmd Command[S], err error) {
	defer recoverPanic(&err)
	if f := t.node.spec.plainFn; f != nil {
		cmd.Update, err = f(ctx, t.input)
		return cmd, err
	}
	return t.node.spec.fn(ctx, t.input)
}

func recoverPanic(err *error) {
	if v := recover(); v != nil {
		*err = &PanicError{Value: v, Stack: debug.Stack()}
	}
}
