package runs

import "sync"

// hub hands one run's stored events to the run's subscribers. Publishing
// never blocks: each subscriber has a bounded buffer, and one whose
// buffer is full is cut (its channel closed), so its stream ends without
// a terminal event and its client reconnects with Last-Event-ID.
//
// Hubs live in the service's registry by run id while anything holds
// them: the goroutine driving the run, or a subscriber (a stream may wait
// on a parked run for its resumption).
type hub struct {
	runID string
	refs  int // holders; guarded by the service's mutex

	mu   sync.Mutex
	subs map[*subscriber]struct{}
	// interactive counts subscribers that are interactive subscribers: a run
	// stopped for an approval waits for the answer only while one is
	// open.
	interactive int
	// unwatched, when made, is closed as interactive drops to zero.
	unwatched chan struct{}
	// streaming counts subscribers that hand the events on as they come;
	// the others wait for the run's end (sync chat). While it is zero,
	// the run's outbox lets its events wait to be stored together.
	streaming int
	// wake, set by the run's outbox, is called as a streaming subscriber
	// joins, so that what waits is stored and sent now.
	wake func()
}

// subscriber is one reader of a hub.
type subscriber struct {
	hub         *hub
	ch          chan *Event
	interactive bool
	awaitsEnd   bool // reads the events only once the run ends
	// gone is set, under the hub's lock, once the subscriber left the
	// hub: cut, or unsubscribed.
	gone bool
}

func newHub(runID string) *hub {
	return &hub{runID: runID, subs: map[*subscriber]struct{}{}}
}

// publish hands e to every subscriber, cutting those that are full.
func (h *hub) publish(e *Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		select {
		case sub.ch <- e:
		default:
			h.removeLocked(sub)
			close(sub.ch)
		}
	}
}

func (h *hub) add(buffer int, interactive, awaitsEnd bool) *subscriber {
	sub := &subscriber{hub: h, ch: make(chan *Event, buffer), interactive: interactive, awaitsEnd: awaitsEnd}
	h.mu.Lock()
	h.subs[sub] = struct{}{}
	if interactive {
		h.interactive++
	}
	var wake func()
	if !awaitsEnd {
		h.streaming++
		wake = h.wake
	}
	h.mu.Unlock()
	if wake != nil {
		wake()
	}
	return sub
}

// setWake makes wake the function called as a streaming subscriber joins.
func (h *hub) setWake(wake func()) {
	h.mu.Lock()
	h.wake = wake
	h.mu.Unlock()
}

// streams reports whether a subscriber hands the run's events on as they
// come.
func (h *hub) streams() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streaming > 0
}

// remove takes sub off the hub; it reports whether it was still on.
func (h *hub) remove(sub *subscriber) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sub.gone {
		return false
	}
	h.removeLocked(sub)
	return true
}

func (h *hub) removeLocked(sub *subscriber) {
	delete(h.subs, sub)
	sub.gone = true
	if !sub.awaitsEnd {
		h.streaming--
	}
	if sub.interactive {
		if h.interactive--; h.interactive == 0 && h.unwatched != nil {
			close(h.unwatched)
			h.unwatched = nil
		}
	}
}

// closed is a channel that is closed.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// idle returns a channel closed once no interactive subscriber follows the run.
func (h *hub) idle() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.interactive == 0 {
		return closed
	}
	if h.unwatched == nil {
		h.unwatched = make(chan struct{})
	}
	return h.unwatched
}
