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
type outbox struct {
	st    store.Events
	hub   *hub
	ctx   context.Context // not cancelled: events are written to the end
	fail  func(error)     // called once, on the flusher, when a batch cannot be stored
	mu    sync.Mutex
	idle  sync.Cond // signalled when the flusher stops
	queue []store.NewEvent
	typed []nodes.Payload // queue's payloads, for the subscribers
	busy  bool            // a flusher goroutine is running
	err   error           // why storing stopped; nothing is stored after it
}

func newOutbox(ctx context.Context, st store.Events, h *hub, fail func(error)) *outbox {
	o := &outbox{st: st, hub: h, ctx: context.WithoutCancel(ctx), fail: fail}
	o.idle.L = &o.mu
	return o
}

// put queues e; it fails once a batch could not be stored, and then the
// run must stop.
func (o *outbox) put(e store.NewEvent, p nodes.Payload) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	o.queue = append(o.queue, e)
	o.typed = append(o.typed, p)
	if !o.busy {
		o.busy = true
		go o.flush()
	}
	return nil
}

// flush stores and publishes batches until the queue is empty.
func (o *outbox) flush() {
	for {
		o.mu.Lock()
		batch, typed := o.queue, o.typed
		o.queue, o.typed = nil, nil
		if len(batch) == 0 {
			o.busy = false
			o.idle.Broadcast()
			o.mu.Unlock()
			return
		}
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
		out := make([]Event, len(evs))
		for i := range evs {
			out[i] = Event{Event: &evs[i], Payload: typed[i]}
			o.hub.publish(&out[i])
		}
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
