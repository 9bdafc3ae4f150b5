package runs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// outbox stores a run's events in order, in batches, on a goroutine of
// its own, and publishes each batch once it is stored. The run goes on
// while its events are written instead of waiting for each commit, and
// still nothing is sent before it is stored: the events queued while one
// batch is written make the next, so a fast run stores its events in a
// few transactions rather than one each.
//
// A response.chunk queued right behind another joins it, and a
// reasoning.chunk one of the same node (see put).
//
// While no subscriber streams the run (a sync chat's caller reads the
// events only at the end), a batch waits up to EventDelay before it is
// written, so that a short run stores its events with its end, in one
// transaction, rather than in several of their own. A subscriber that
// streams, the run ending, or drain stores what waits at once. Nothing
// waiting has been sent, so nothing acknowledged waits; a follower
// reading the store from another process sees the events at most
// EventDelay later.
type outbox struct {
	st   store.Events
	hub  *hub
	ctx  context.Context // not cancelled: events are written to the end
	fail func(error)     // called once, on the flusher, when a batch cannot be stored
	// encode is the run's envelope, for the data of an event queued
	// without it (see put).
	encode func(events.Payload) ([]byte, error)
	mu     sync.Mutex
	idle   sync.Cond // signalled when the flusher stops
	queue  []store.NewEvent
	typed  []events.Payload // queue's payloads, for the subscribers
	busy   bool             // a flusher goroutine is running
	err    error            // why storing stopped; nothing is stored after it
	// held: the run is ending, and its caller stores what is queued
	// (see hold); the flusher stops after the batch it writes.
	held bool
	// due, when set, starts the flusher once a waiting batch has waited
	// delay (EventDelay; see schedule).
	due   *time.Timer
	delay time.Duration
	// draining: the run is ending; nothing waits any more.
	draining bool
	// joining: chunks joined the queue's last event, and tail holds its
	// content so far, set on it once, as the event is sealed, rather
	// than copied anew at every chunk.
	joining bool
	tail    strings.Builder
}

// EventDelay is the longest a run's events wait to be stored together
// while nobody streams them (see outbox): under a frame of a chat page,
// so a follower in another process still sees a run move as it goes.
const EventDelay = 50 * time.Millisecond

func newOutbox(ctx context.Context, st store.Events, h *hub, encode func(events.Payload) ([]byte, error), fail func(error)) *outbox {
	o := &outbox{st: st, hub: h, ctx: context.WithoutCancel(ctx), encode: encode, fail: fail, delay: EventDelay}
	o.idle.L = &o.mu
	return o
}

// put queues e; it fails once a batch could not be stored, and then the
// run must stop. An event of the root agent may come without its Data,
// to be encoded (encode) as its batch is taken, once.
//
// A response.chunk queued so, whose predecessor in the queue is one too,
// is joined to it: one event with both contents, in order; so is a
// reasoning.chunk behind one of the same node. Both wait for
// the same batch anyway, so nobody sees the text later; but a model that
// streams faster than the store commits (the offline model sends one
// chunk per word) costs a row per batch instead of one per chunk, and
// the joined text is encoded once, not once per chunk. A chunk with its
// Data (a sub-agent's, whose envelope names it) is never joined.
func (o *outbox) put(e store.NewEvent, p events.Payload) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	if e.Data == nil && o.join(p) {
		return nil
	}
	o.seal()
	o.queue = append(o.queue, e)
	o.typed = append(o.typed, p)
	o.schedule()
	return nil
}

// schedule starts the flusher for what is queued or, while nobody
// streams the run, lets it wait for EventDelay. Callers hold o.mu.
func (o *outbox) schedule() {
	if !o.ready() {
		return
	}
	if o.waits() {
		if o.due == nil {
			o.due = time.AfterFunc(o.delay, o.wake)
		}
		return
	}
	o.start()
}

// ready reports whether there is a batch to write and nothing keeps the
// flusher from writing it now. Callers hold o.mu.
func (o *outbox) ready() bool { return !o.busy && !o.held && o.err == nil && len(o.queue) > 0 }

// waits reports whether queued events may wait to be stored together.
// Callers hold o.mu.
func (o *outbox) waits() bool { return !o.draining && !o.hub.streams() }

// start starts the flusher. Callers hold o.mu.
func (o *outbox) start() {
	if o.due != nil {
		o.due.Stop()
		o.due = nil
	}
	o.busy = true
	go o.flush()
}

// wake stores what waits now: its time is up, or a subscriber that
// streams joined.
func (o *outbox) wake() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ready() {
		o.start()
	}
}

// join joins chunk p to the queue's last event when that is a chunk of
// the same kind queued without its data too (a reasoning chunk of the
// same node), and reports whether it did. Callers hold o.mu.
func (o *outbox) join(p events.Payload) bool {
	n := len(o.typed)
	if n == 0 || o.queue[n-1].Data != nil {
		return false
	}
	var before, content string
	switch c := p.(type) {
	case *events.ResponseChunk:
		last, ok := o.typed[n-1].(*events.ResponseChunk)
		if !ok {
			return false
		}
		before, content = last.Content, c.Content
	case *events.ReasoningChunk:
		last, ok := o.typed[n-1].(*events.ReasoningChunk)
		if !ok || last.Node != c.Node {
			return false
		}
		before, content = last.Content, c.Content
	default:
		return false
	}
	if !o.joining {
		o.tail.WriteString(before)
		o.joining = true
	}
	o.tail.WriteString(content)
	return true
}

// seal gives the queue's last event the content chunks joined to it, if
// any did. Callers hold o.mu, and seal before they queue an event behind
// it or take the queue.
func (o *outbox) seal() {
	if !o.joining {
		return
	}
	n := len(o.typed)
	switch last := o.typed[n-1].(type) {
	case *events.ResponseChunk:
		o.typed[n-1] = &events.ResponseChunk{Content: o.tail.String()}
	case *events.ReasoningChunk:
		o.typed[n-1] = &events.ReasoningChunk{Node: last.Node, Content: o.tail.String()}
	}
	o.tail.Reset()
	o.joining = false
}

// take empties the queue and returns what it held, sealed. Callers hold
// o.mu.
func (o *outbox) take() ([]store.NewEvent, []events.Payload) {
	o.seal()
	batch, typed := o.queue, o.typed
	o.queue, o.typed = nil, nil
	return batch, typed
}

// joinable reports whether p is a chunk that put may join to the one
// before it: response.chunk and reasoning.chunk.
func joinable(p events.Payload) bool {
	switch p.(type) {
	case *events.ResponseChunk, *events.ReasoningChunk:
		return true
	}
	return false
}

// encodeQueued gives the events of a batch queued without their data
// their data. An error fails the batch, as storing it would; the chunks
// queued so, all strings, cannot fail to encode.
func (o *outbox) encodeQueued(batch []store.NewEvent, typed []events.Payload) error {
	for i := range batch {
		if batch[i].Data != nil {
			continue
		}
		data, err := o.encode(typed[i])
		if err != nil {
			return fmt.Errorf("encoding %s: %w", batch[i].Type, err)
		}
		batch[i].Data = data
	}
	return nil
}

// flush stores and publishes batches until the queue is empty, or until
// what was queued meanwhile may wait (see schedule).
func (o *outbox) flush() {
	for first := true; ; first = false {
		o.mu.Lock()
		if len(o.queue) == 0 || o.held || !first && o.waits() {
			o.busy = false
			o.schedule()
			o.idle.Broadcast()
			o.mu.Unlock()
			return
		}
		batch, typed := o.take()
		o.mu.Unlock()
		err := o.encodeQueued(batch, typed)
		var evs []store.Event
		if err == nil {
			evs, err = o.st.AppendEvents(o.ctx, batch)
		}
		if err != nil {
			o.mu.Lock()
			o.err, o.busy = err, false
			o.take() // dropped: nothing is stored after err
			o.idle.Broadcast()
			o.mu.Unlock()
			o.fail(err)
			return
		}
		o.publish(evs, typed)
	}
}

// publish sends stored events to the run's subscribers.
func (o *outbox) publish(evs []store.Event, typed []events.Payload) {
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
func (o *outbox) hold() ([]store.NewEvent, []events.Payload, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held, o.draining = true, true
	if o.due != nil {
		o.due.Stop()
		o.due = nil
	}
	for o.busy {
		o.idle.Wait()
	}
	rest, typed := o.take()
	if o.err == nil {
		o.err = o.encodeQueued(rest, typed)
	}
	return rest, typed, o.err
}

// release takes back what hold returned, when the caller could not store
// it: the events are queued again, first, and stored as put's are.
func (o *outbox) release(rest []store.NewEvent, typed []events.Payload) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held = false
	o.queue, o.typed = append(rest, o.queue...), append(typed, o.typed...)
	o.schedule()
}

// drain stores what waits, waits until every queued event is stored and
// published, so no flusher or timer outlives it, and returns the error
// that stopped storing, if one did.
func (o *outbox) drain() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.draining = true
	o.schedule()
	for o.busy {
		o.idle.Wait()
	}
	return o.err
}
