package llm

import (
	"context"
	"sync"
	"time"
)

// callClock is a guarded call's timeout. It bounds the whole call — every
// attempt and every wait between attempts — and stops counting while the
// call waits for a person ([PauseTimeout]): the timeout bounds the remote
// side's work, not the user's thinking. When it runs out it cancels the
// call's context with a [timeoutError] as the cause. Pauses nest.
type callClock struct {
	d      time.Duration
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	remaining time.Duration
	started   time.Time
	paused    int
	t         *time.Timer // nil while paused or stopped
	stopped   bool
	expired   bool
}

type clockKey struct{}

// startClock returns ctx bounded by a clock of d (d > 0) and the clock;
// stop it when the call ends.
func startClock(ctx context.Context, d time.Duration) (context.Context, *callClock) {
	ctx, cancel := context.WithCancelCause(ctx)
	c := &callClock{d: d, cancel: cancel, remaining: d, started: time.Now()}
	c.t = time.AfterFunc(d, c.fire)
	return context.WithValue(ctx, clockKey{}, c), c
}

func (c *callClock) fire() {
	c.mu.Lock()
	run := !c.stopped && c.paused == 0
	if run {
		c.stopped, c.expired = true, true
	}
	c.mu.Unlock()
	if run {
		c.cancel(&timeoutError{d: c.d})
	}
}

// pause stops the clock until the matching resume.
func (c *callClock) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused++
	if c.paused > 1 || c.stopped || c.t == nil {
		return
	}
	if c.t.Stop() {
		c.remaining -= time.Since(c.started)
	} else { // fire is running and will see the pause: no time was left
		c.remaining = 0
	}
	c.t = nil
}

// resume restarts the clock with the time that was left.
func (c *callClock) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused == 0 {
		return
	}
	c.paused--
	if c.paused > 0 || c.stopped {
		return
	}
	c.started = time.Now()
	c.t = time.AfterFunc(max(c.remaining, 0), c.fire)
}

// left is the time the call has left; a paused clock keeps what it had.
func (c *callClock) left() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.expired:
		return 0
	case c.t == nil:
		return c.remaining
	default:
		return c.remaining - time.Since(c.started)
	}
}

// ranOut reports whether the clock expired.
func (c *callClock) ranOut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expired
}

// stop ends the clock without expiring and releases the call's context.
func (c *callClock) stop() {
	c.mu.Lock()
	c.stopped = true
	if c.t != nil {
		c.t.Stop()
	}
	c.mu.Unlock()
	c.cancel(nil)
}

// PauseTimeout stops the timeout of the guarded call ctx belongs to until
// resume is called, so that time a tool spends waiting for a person (an
// elicitation, a confirmation) does not count against it. Pauses nest;
// outside a guarded call it does nothing. The tool provider (operators)
// pauses around every question a tool asks, so tool sources need not.
func PauseTimeout(ctx context.Context) (resume func()) {
	c, _ := ctx.Value(clockKey{}).(*callClock)
	if c == nil {
		return func() {}
	}
	c.pause()
	var once sync.Once
	return func() { once.Do(c.resume) }
}
