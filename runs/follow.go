package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// Event is one stored event of a run, as a Subscription and Follow hand
// it out: the record (Seq, Type, and Data, the JSON object the native
// API sends) and, for an event published as the run went, its typed
// payload.
type Event struct {
	*store.Event
	// Payload is the event as the agent (or the service, for
	// run.started) emitted it; nil for an event read back from the
	// store (see Typed).
	Payload events.Payload
}

// Typed returns the event's typed payload, decoding Data once when the
// event was read back from the store (see Decode).
func (e *Event) Typed() (events.Payload, error) {
	if e.Payload != nil {
		return e.Payload, nil
	}
	return events.Decode(e.Type, e.Data)
}

// Namespace is the path of the sub-agent whose event e is, "" for the
// root agent's (see events.Event.Namespace); for subagent.start and
// subagent.end, the path of the sub-agent they frame. It is read from
// the event's data, where it is the "namespace" field.
func (e *Event) Namespace() string {
	if !bytes.Contains(e.Data, []byte(`"namespace":`)) {
		return ""
	}
	var v struct {
		Namespace string `json:"namespace"`
	}
	_ = json.Unmarshal(e.Data, &v) // the record's own encoding: a bad one has no namespace to give
	return v.Namespace
}

// Key is an id unique to the event among every run's: its run's id and
// its seq, for protocols whose messages need one.
func (e *Event) Key() string { return e.RunID + "-" + strconv.FormatInt(e.Seq, 10) }

// Subscription is one reader of a run's events as they are stored, from
// Start or Subscribe; Follow reads it. Close it when done.
type Subscription struct {
	m           *Service
	runID       string
	interactive bool
	awaitsEnd   bool
	sub         *subscriber
}

// Subscribe registers a reader of the run's live events; Follow, with
// Replay, reads what was stored before. Interactive marks a stream a
// user watches: a run stopped for an approval, or on a tool's question,
// waits for the answer only while one follows it.
func (m *Service) Subscribe(runID string, interactive bool) *Subscription {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.subscriptionLocked(m.acquireHubLocked(runID), interactive, false)
}

// subscriptionLocked adds a subscriber to h, which holds a reference of
// h's taken by the caller until Close.
// awaitsEnd marks a caller that reads the events only once the run ends
// (see StartRequest.AwaitsEnd).
func (m *Service) subscriptionLocked(h *hub, interactive, awaitsEnd bool) *Subscription {
	return &Subscription{m: m, runID: h.runID, interactive: interactive, awaitsEnd: awaitsEnd,
		sub: h.add(m.cfg.StreamBuffer, interactive, awaitsEnd)}
}

// Close takes the subscription off its run.
func (s *Subscription) Close() { s.m.unsubscribe(s.sub) }

// rejoin replaces a subscriber that was cut for falling behind.
func (s *Subscription) rejoin() {
	s.m.unsubscribe(s.sub)
	s.m.mu.Lock()
	n := s.m.subscriptionLocked(s.m.acquireHubLocked(s.runID), s.interactive, s.awaitsEnd)
	s.m.mu.Unlock()
	s.sub = n.sub
}

// FollowRequest says which run Follow follows, from where, and how.
type FollowRequest struct {
	User, ConversationID, RunID string
	// Sub brings the run's live events: subscribed before anything of
	// the run was read, so that nothing falls between.
	Sub *Subscription
	// After is the seq of the last event the caller has; Follow hands
	// out only later ones.
	After int64
	// Replay reads the stored events after After first: for a client
	// reconnecting, or following a run it did not start. Without it only
	// the live ones come, as for a subscription made by Start.
	Replay bool
	// Idle, when set, is called every Heartbeat in which nothing was
	// handed out; an error ends Follow.
	Heartbeat time.Duration
	Idle      func() error
	// Rejoin suits a caller that waits for the run's end: a subscription
	// cut for falling behind is renewed and what it missed read from the
	// store, and Shutdown does not end the wait (the run's terminal
	// event, which Shutdown makes it send, does). Without it, either ends
	// Follow, and the client reconnects.
	Rejoin bool
	// Poll, when set, is called once before the live events and then
	// every PollEvery, on Follow's goroutine (so it may write to the
	// caller's stream between events): what the caller sends beside the
	// run's events, such as document.status. It reports whether it
	// wrote; an error ends Follow. A value on PollNow calls it at once.
	PollEvery time.Duration
	PollNow   <-chan struct{}
	Poll      func() (wrote bool, err error)
	// Begin, when set, is called first, before any event: what opens
	// the caller's stream (a protocol's run-start frame). An error ends
	// Follow.
	Begin func() error
	// Through is the seq of an event up to which terminal events do not
	// end Follow: a replay goes on past the segments of the run that
	// ended (parked for an approval) before the follower began.
	Through int64
	// Gone, when set, reports whether the client is gone although ctx
	// has not ended: a write to it failed. Gone or ctx ended, Follow
	// applies OnDisconnect before it returns.
	Gone         func() bool
	OnDisconnect Disconnect
	// ResumeGrace is DisconnectAwaitResume's wait; 0 means
	// DefaultResumeGrace.
	ResumeGrace time.Duration
	// Resumes marks a client resuming the stream of a run whose client
	// went away: the run, waiting for it (DisconnectAwaitResume), is
	// kept.
	Resumes bool
}

// clusterPoll is how often a follower reads the store for the events of
// a run that another process runs: that process publishes them to its
// own subscribers only.
const clusterPoll = 250 * time.Millisecond

// replayPage is how many stored events a follower reads at once, so that
// what it holds of a run is a page however long the run.
const replayPage = 256

// Follow hands the run's events after req.After to yield, in order and
// each once, from the store and then live, until the run's terminal
// event (it then reports true), yield or the store fails (false and the
// error), ctx ends (false and ctx's error), the subscription is cut or
// the service shuts down (false, nil; see FollowRequest.Rejoin). The
// events of a run that another process runs, or took over, are read from
// the store as they are stored. A client gone before the run's end (ctx
// ended, or req.Gone) leaves the run as req.OnDisconnect says; Follow
// returns once that is done.
func (m *Service) Follow(ctx context.Context, req FollowRequest, yield func(*Event) error) (bool, error) {
	if req.Resumes {
		m.claimOrphan(req.ConversationID, req.RunID, true)
	}
	f := follower{m: m, ctx: ctx, req: req, yield: yield, last: req.After}
	done, err := f.run()
	if !done && (ctx.Err() != nil || req.Gone != nil && req.Gone()) {
		m.disconnected(ctx, req)
	}
	return done, err
}

// follower is one Follow.
type follower struct {
	m     *Service
	ctx   context.Context
	req   FollowRequest
	yield func(*Event) error
	last  int64
	wrote bool // since the last heartbeat
}

// one hands out an event if it comes after last; it reports whether it
// was terminal.
func (f *follower) one(e *Event) (bool, error) {
	if e.Seq <= f.last {
		return false, nil
	}
	if err := f.yield(e); err != nil {
		return false, err
	}
	f.wrote, f.last = true, e.Seq
	return events.Terminal(e.Type) && e.Seq > f.req.Through, nil
}

// catchUp hands out the stored events after last, a page at a time.
func (f *follower) catchUp() (done bool, err error) {
	serr := f.m.eachStored(f.ctx, f.req.User, f.req.RunID, f.last, func(e *Event) bool {
		done, err = f.one(e)
		return done || err != nil
	})
	if err == nil {
		err = serr
	}
	return done, err
}

// live hands out one live event, first filling from the store a gap
// before it, which is not expected.
func (f *follower) live(e *Event) (bool, error) {
	if e.Seq > f.last+1 {
		return f.catchUp()
	}
	return f.one(e)
}

func (f *follower) run() (bool, error) {
	if f.req.Begin != nil {
		if err := f.req.Begin(); err != nil {
			return false, err
		}
	}
	if f.req.Replay {
		if done, err := f.catchUp(); done || err != nil {
			return done, err
		}
	}
	var tick <-chan time.Time
	if f.req.Idle != nil && f.req.Heartbeat > 0 {
		t := time.NewTicker(f.req.Heartbeat)
		defer t.Stop()
		tick = t.C
	}
	var poll <-chan time.Time
	if f.m.cfg.Cluster != nil {
		pt := time.NewTicker(clusterPoll)
		defer pt.Stop()
		poll = pt.C
	}
	var side <-chan time.Time
	var now <-chan struct{}
	if f.req.Poll != nil && f.req.PollEvery > 0 {
		now = f.req.PollNow
		if err := f.poll(); err != nil {
			return false, err
		}
		st := time.NewTicker(f.req.PollEvery)
		defer st.Stop()
		side = st.C
	}
	life := f.m.life.Done()
	if f.req.Rejoin {
		life = nil
	}
	f.wrote = false
	for {
		select {
		case <-poll:
			if f.m.runsHere(f.req.ConversationID, f.req.RunID) {
				continue
			}
			// Taken over by another process, or never here: it
			// publishes there, and stores.
			if done, err := f.catchUp(); done || err != nil {
				return done, err
			}
		case e, ok := <-f.req.Sub.sub.ch:
			if !ok { // cut: too far behind
				if !f.req.Rejoin {
					return false, nil
				}
				f.req.Sub.rejoin()
				if done, err := f.catchUp(); done || err != nil {
					return done, err
				}
				continue
			}
			if done, err := f.live(e); done || err != nil {
				return done, err
			}
		case <-side:
			if err := f.poll(); err != nil {
				return false, err
			}
		case <-now:
			if err := f.poll(); err != nil {
				return false, err
			}
		case <-tick:
			if !f.wrote {
				if err := f.req.Idle(); err != nil {
					return false, err
				}
			}
			f.wrote = false
		case <-f.ctx.Done():
			return false, f.ctx.Err()
		case <-life:
			// Shutdown ends followers once the runs have stopped, so
			// what they published last (their terminal events) is
			// queued here: hand it out before leaving.
			for {
				select {
				case e, ok := <-f.req.Sub.sub.ch:
					if !ok {
						return false, nil
					}
					if done, err := f.live(e); done || err != nil {
						return done, err
					}
				default:
					return false, nil
				}
			}
		}
	}
}

// poll calls the request's Poll.
func (f *follower) poll() error {
	wrote, err := f.req.Poll()
	if wrote {
		f.wrote = true
	}
	return err
}

// eachStored calls fn with each of the run's stored events after after,
// in order, reading them a page at a time, until fn says stop or the
// stored events run out.
func (m *Service) eachStored(ctx context.Context, user, runID string, after int64, fn func(*Event) (stop bool)) error {
	for {
		evs, err := m.readPage(ctx, user, runID, after)
		if err != nil {
			return err
		}
		for i := range evs {
			if fn(&evs[i]) {
				return nil
			}
		}
		// A page may stop short of its count at store.PageBytes: only an
		// empty one says the stored events ran out.
		if len(evs) == 0 {
			return nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// readPage reads a page of the run's events after after, in a slot of
// pageReads.
func (m *Service) readPage(ctx context.Context, user, runID string, after int64) ([]Event, error) {
	select {
	case m.pageReads <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.pageReads }()
	evs, err := m.st.EventsAfter(ctx, user, runID, after, replayPage)
	if err != nil {
		return nil, err
	}
	out := make([]Event, len(evs))
	for i := range evs {
		out[i].Event = &evs[i]
	}
	return out, nil
}
