package runs

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Disconnect says what becomes of a run when the client following it
// goes away before its end (Follow's context ends, or FollowRequest.Gone
// reports a write that failed). Each request chooses; Follow applies the
// choice, here and nowhere else.
type Disconnect int

const (
	// DisconnectKeep, the zero value: the run goes on, for its events to
	// be followed again (a client following a run it did not start,
	// LangGraph's on_disconnect continue).
	DisconnectKeep Disconnect = iota
	// DisconnectDefault: the client started the run; it is cancelled
	// with Config.CancelOnDisconnect, kept otherwise (the native API).
	DisconnectDefault
	// DisconnectCancel: the run is cancelled as the user's cancel
	// cancels it, and Follow returns once it has ended (clients that stop
	// a run by aborting its request: AG-UI, OpenAI, LangGraph's
	// on_disconnect cancel).
	DisconnectCancel
	// DisconnectAwaitResume: the run waits FollowRequest.ResumeGrace for
	// a client to resume its stream (a Follow with Resumes set) and is
	// cancelled if none does; a new message on the conversation (a Start
	// with WaitIdle) cancels it at once. For the AI SDK, whose stop()
	// aborts the request as a page reload does, and only the reload
	// resumes.
	DisconnectAwaitResume
)

// DefaultResumeGrace is FollowRequest.ResumeGrace's default: time for a
// page to reload and resume.
const DefaultResumeGrace = 5 * time.Second

// cancelWait bounds how long a follower whose client went away waits for
// the run it cancelled to end, so that the user's next request finds the
// conversation free.
const cancelWait = 30 * time.Second

// settleWait is how long a Start with WaitIdle waits for the
// conversation's run to end.
const settleWait = 2 * time.Second

// orphan is a run whose client went away, waiting for a resume.
type orphan struct {
	runID   string
	stop    context.CancelFunc // ends the wait
	resumed bool
}

// disconnected applies req.OnDisconnect to the run of a client that went
// away.
func (m *Service) disconnected(ctx context.Context, req FollowRequest) {
	ctx = context.WithoutCancel(ctx)
	switch req.OnDisconnect {
	case DisconnectKeep:
		return
	case DisconnectDefault:
		if !m.cfg.CancelOnDisconnect {
			return
		}
	case DisconnectAwaitResume:
		if !m.awaitResume(ctx, req) {
			return
		}
	}
	cctx, cancel := context.WithTimeout(ctx, cancelWait)
	defer cancel()
	if err := m.cancelRun(cctx, req.User, req.ConversationID, req.RunID); err != nil && !errors.Is(err, ErrNothingToRun) {
		m.log.LogAttrs(ctx, slog.LevelWarn, "cancelling the run of a client that went away failed",
			slog.String("run_id", req.RunID), slog.Any("error", err))
	}
}

// awaitResume waits, for the request's ResumeGrace, for a client to
// resume the run's stream; it reports whether the run is to be
// cancelled: no client resumed it and it has not ended.
func (m *Service) awaitResume(ctx context.Context, req FollowRequest) bool {
	grace := req.ResumeGrace
	if grace <= 0 {
		grace = DefaultResumeGrace
	}
	wait, stop := context.WithCancel(ctx)
	defer stop()
	x := &orphan{runID: req.RunID, stop: stop}
	m.mu.Lock()
	if m.settling[req.ConversationID] > 0 {
		stop() // a new message waits for the conversation: no resume to wait for
	} else {
		m.orphans[req.ConversationID] = x
	}
	m.mu.Unlock()
	ended := m.awaitIdle(wait, req.ConversationID, grace)
	m.mu.Lock()
	if m.orphans[req.ConversationID] == x {
		delete(m.orphans, req.ConversationID)
	}
	resumed := x.resumed
	m.mu.Unlock()
	return !ended && !resumed
}

// claimOrphan ends the wait of the conversation's run whose client went
// away, if it is runID's ("" for any): resumed, it lives on; otherwise
// it is cancelled now.
func (m *Service) claimOrphan(conversationID, runID string, resumed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if x := m.orphans[conversationID]; x != nil && (runID == "" || x.runID == runID) {
		x.resumed = resumed
		x.stop()
		delete(m.orphans, conversationID)
	}
}

// settle waits, settleWait at most, for the conversation's live run to
// end, cancelling at once a run whose client went away (also one whose
// client is noticed gone meanwhile: its handler may notice only after
// the new message came). It reports whether no run is live.
func (m *Service) settle(ctx context.Context, conversationID string) bool {
	m.mu.Lock()
	m.settling[conversationID]++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		if m.settling[conversationID]--; m.settling[conversationID] <= 0 {
			delete(m.settling, conversationID)
		}
		m.mu.Unlock()
	}()
	m.claimOrphan(conversationID, "", false)
	return m.awaitIdle(ctx, conversationID, settleWait)
}

// awaitIdle waits, for d at most, until no run of the conversation is
// live in this process, and reports whether none is.
func (m *Service) awaitIdle(ctx context.Context, conversationID string, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		rn := m.live(conversationID)
		if rn == nil {
			return true
		}
		select {
		case <-rn.done:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}
