package runs

import (
	"context"
	"sync"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/nodes"
)

// outbox stores a run's events in order, in batches, on a goroutine of
// its own, and publishes each batch once it is stored. The run goes on
// while its events are written instead of waiting for each commit, and
// still nothing is sent before it is stored: the events queued while one
// batch is written make the next, so a fast run stores its events in a
// few transactions rather than one each.
//
// A response.chunk queued right behind another joins it (see put).
type outbox struct {
	st   store.Events
	hub  *hub
	ctx  context.Context // not cancelled: events are written to the end
	fail func(error)     // called once, on the flusher, when a batch cannot be stored
	// encode is the run's envelope, for a joined chunk's data.
	encode func(nodes.Payload) ([]byte, error)
	mu     sync.Mutex
	idle   sync.Cond // signalled when the flusher stops
	queue  []store.NewEvent
	typed  []nodes.Payload // queue's payloads, for the subscribers
	busy   bool            // a flusher goroutine is running
	err    error           // why storing stopped; nothing is stored after it
	// held: the run is ending, and its caller stores what is queued
	// (see hold); the flusher stops after the batch it writes.
	held bool
}

func newOutbox(ctx context.Context, st store.Events, h *hub, encode func(nodes.Payload) ([]byte, error), fail func(error)) *outbox {
	o := &outbox{st: st, hub: h, ctx: context.WithoutCancel(ctx), encode: encode, fail: fail}
	o.idle.L = &o.mu
	return o
}

// put queues e; it fails once a batch could not be stored, and then the
// run must stop.
//
// A response.chunk whose predecessor in the queue is one too is joined
// to it: one event with both contents, in order. Both wait for the same
// batch anyway, so nobody sees the text later; but a model that streams
// faster than the store commits (the offline model sends one chunk per
// word) costs a row per batch instead of one per chunk.
func (o *outbox) put(e store.NewEvent, p nodes.Payload) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	if o.join(p) {
		return nil
	}
	o.queue = append(o.queue, e)
	o.typed = append(o.typed, p)
	if !o.busy {
		o.busy = true
		go o.flush()
	}
	return nil
}

// join joins chunk p to the queue's last event when that is a chunk too,
// and reports whether it did. Callers hold o.mu.
func (o *outbox) join(p nodes.Payload) bool {
	c, ok := p.(*nodes.ResponseChunk)
	n := len(o.typed)
	if !ok || n == 0 {
		return false
	}
	last, ok := o.typed[n-1].(*nodes.ResponseChunk)
	if !ok {
		return false
	}
	joined := &nodes.ResponseChunk{Content: last.Content + c.Content}
	data, err := o.encode(joined)
	if err != nil {
		return false // queued on its own, as it came
	}
	o.queue[n-1].Data, o.typed[n-1] = data, joined
	return true
}

// flush stores and publishes batches until the queue is empty.
func (o *outbox) flush() {
	for {
		o.mu.Lock()
		batch, typed := o.queue, o.typed
		if len(batch) == 0 || o.held {
			o.busy = false
			o.idle.Broadcast()
			o.mu.Unlock()
			return
		}
		o.queue, o.typed = nil, nil
		o.mu.Unlock()
		evs, err := o.st.AppendEvents(o.ctx, batch)
		if err != nil {
			o.mu.Lock()
			o.err, o.queue, o.typed, o.busy = err, nil, nil, false
			o.idle.Broadcast()
			o.mu.Unlock()
			o.fail(err)
			return
		}
		o.publish(evs, typed)
	}
}

// publish sends stored events to the run's subscribers.
func (o *outbox) publish(evs []store.Event, typed []nodes.Payload) {
	out := make([]Event, len(evs))
	for i := range evs {
		out[i] = Event{Event: &evs[i], Payload: typed[i]}
		o.hub.publish(&out[i])
	}
}

// hold is drain for a run that ends: it waits for the batch being
// written, if any, and returns the events queued behind it, unstored,
// for the caller to store with the run's end in one commit (and then to
// publish); or the error that stopped storing. Put must not be called
// again but after release.
func (o *outbox) hold() ([]store.NewEvent, []nodes.Payload, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held = true
	for o.busy {
		o.idle.Wait()
	}
	rest, typed := o.queue, o.typed
	o.queue, o.typed = nil, nil
	return rest, typed, o.err
}

// release takes back what hold returned, when the caller could not store
// it: the events are queued again, first, and stored as put's are.
func (o *outbox) release(rest []store.NewEvent, typed []nodes.Payload) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held = false
	o.queue, o.typed = append(rest, o.queue...), append(typed, o.typed...)
	if len(o.queue) > 0 && !o.busy && o.err == nil {
		o.busy = true
		go o.flush()
	}
}

// drain waits until every queued event is stored and published, so no
// flusher outlives it, and returns the error that stopped storing, if
// one did.
func (o *outbox) drain() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.busy {
		o.idle.Wait()
	}
	return o.err
}
