package mcp

import (
	"sync"
	"time"
)

// callTimer is a call's timeout that stops counting while the call waits
// for the user (an elicitation): the timeout bounds the server's work, not
// the user's thinking. When it runs out it calls expire once. Pauses nest.
type callTimer struct {
	mu        sync.Mutex
	remaining time.Duration
	started   time.Time
	paused    int
	t         *time.Timer // nil while paused or stopped
	expire    func()
	stopped   bool
}

// startCallTimer starts a timer of d; d <= 0 never expires.
func startCallTimer(d time.Duration, expire func()) *callTimer {
	c := &callTimer{remaining: d, expire: expire}
	if d > 0 {
		c.started = time.Now()
		c.t = time.AfterFunc(d, c.fire)
	} else {
		c.stopped = true
	}
	return c
}

func (c *callTimer) fire() {
	c.mu.Lock()
	run := !c.stopped && c.paused == 0
	c.stopped = c.stopped || run
	c.mu.Unlock()
	if run {
		c.expire()
	}
}

// pause stops the clock until the matching resume.
func (c *callTimer) pause() {
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
func (c *callTimer) resume() {
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

// stop ends the timer without expiring.
func (c *callTimer) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.t != nil {
		c.t.Stop()
	}
}
