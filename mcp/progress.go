package mcp

import (
	"context"
	"fmt"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
)

// inflight is one tool call under way on a connection. Its progress token
// routes the server's notifications/progress to the call's Messenger; its
// context and Messenger serve the server's elicitations.
type inflight struct {
	token string
	tool  string // the MCP name
	call  operators.Call
	ctx   context.Context
	pump  *progressPump
	seq   uint64
}

type inflightKey struct{}

// withInflight marks ctx as serving call f, so that an elicitation the
// server sends while handling it (2026-07-28 input requests, and legacy
// elicitation/create over HTTP, both of which reach the handler with the
// call's context) finds its call.
func withInflight(ctx context.Context, f *inflight) context.Context {
	return context.WithValue(ctx, inflightKey{}, f)
}

func inflightFrom(ctx context.Context) *inflight {
	f, _ := ctx.Value(inflightKey{}).(*inflight)
	return f
}

// callTable holds a connection's calls under way.
type callTable struct {
	mu      sync.Mutex
	seq     uint64
	byToken map[string]*inflight
}

// add registers a call and gives it a progress token unique on the
// connection.
func (t *callTable) add(f *inflight) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	f.seq = t.seq
	f.token = fmt.Sprintf("trellis-%d", t.seq)
	if t.byToken == nil {
		t.byToken = map[string]*inflight{}
	}
	t.byToken[f.token] = f
}

func (t *callTable) remove(f *inflight) {
	t.mu.Lock()
	delete(t.byToken, f.token)
	t.mu.Unlock()
}

func (t *callTable) get(token string) *inflight {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byToken[token]
}

// latest is the most recently started call, or nil. A legacy stdio server's
// elicitation/create carries nothing naming the call it belongs to; with
// one call under way (the usual case) this is it, with several it is a
// guess.
func (t *callTable) latest() *inflight {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out *inflight
	for _, f := range t.byToken {
		if out == nil || f.seq > out.seq {
			out = f
		}
	}
	return out
}

// progressFromNotification reads a notifications/progress.
func progressFromNotification(n mcpgo.JSONRPCNotification) (token string, ev events.ToolProgress, ok bool) {
	f := n.Params.AdditionalFields
	switch tok := f["progressToken"].(type) {
	case string:
		token = tok
	case float64:
		token = fmt.Sprint(tok)
	default:
		return "", ev, false
	}
	ev.Progress, _ = f["progress"].(float64)
	ev.Total, _ = f["total"].(float64)
	ev.Message, _ = f["message"].(string)
	return token, ev, true
}

// maxQueuedProgress bounds a call's undelivered progress; beyond it the
// oldest updates are dropped (a newer one supersedes them).
const maxQueuedProgress = 256

// progressPump delivers one call's progress to its Messenger, in order,
// from a goroutine of its own, so a slow consumer never holds up the
// connection's reader (and with it every other call's answers).
type progressPump struct {
	ctx  context.Context
	call operators.Call

	mu     sync.Mutex
	queue  []events.ToolProgress
	last   float64 // the progress of the newest update taken
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

// startProgress starts a pump for call; with no Messenger it drops
// everything and starts nothing.
func startProgress(ctx context.Context, call operators.Call) *progressPump {
	p := &progressPump{ctx: ctx, call: call, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if call.Messenger == nil {
		p.closed = true
		close(p.done)
		return p
	}
	go p.run()
	return p
}

func (p *progressPump) push(ev events.ToolProgress) {
	p.mu.Lock()
	// A server's progress only increases (the spec says it must), but
	// an update can overtake another: mcp-go's HTTP server sends a
	// session's notifications down whichever of its open streams reads
	// first. One older than the newest taken is dropped, so the call's
	// progress never goes back.
	if p.closed || ev.Progress < p.last {
		p.mu.Unlock()
		return
	}
	p.last = ev.Progress
	if len(p.queue) == maxQueuedProgress {
		p.queue = p.queue[1:]
	}
	ev.ToolCallID = p.call.ToolCallID
	p.queue = append(p.queue, ev)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *progressPump) run() {
	defer close(p.done)
	for {
		p.mu.Lock()
		batch, closed := p.queue, p.closed
		p.queue = nil
		p.mu.Unlock()
		for _, ev := range batch {
			if p.ctx.Err() != nil {
				return
			}
			_ = p.call.Messenger.Progress(p.ctx, ev)
		}
		if closed && len(batch) == 0 {
			return
		}
		if !closed {
			select {
			case <-p.wake:
			case <-p.ctx.Done():
				return
			}
		}
	}
}

// finish stops taking progress and waits until what was queued has been
// delivered (or the call's context has ended), so that a call's progress
// events all come before its result.
func (p *progressPump) finish() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	<-p.done
}
