package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/trellis-ai/trellis/store"
)

// Multitask is what Start does with a message for a conversation whose
// run is going or waits for a person: LangGraph's multitask_strategy.
// The zero value rejects, as MultitaskReject.
type Multitask string

// Multitask strategies.
const (
	// MultitaskReject refuses the message with store.ErrRunActive.
	MultitaskReject Multitask = "reject"
	// MultitaskInterrupt cancels the run (what it waits for expires, as
	// for Cancel), waits for its end, and starts the message.
	MultitaskInterrupt Multitask = "interrupt"
	// MultitaskRollback is MultitaskInterrupt, and the cancelled turn is
	// taken out of the history: its run is superseded, as by an edit, and
	// the message runs from the state before it.
	MultitaskRollback Multitask = "rollback"
	// MultitaskEnqueue stores the message durably; it runs once the runs
	// before it have ended, in order (see Enqueued).
	MultitaskEnqueue Multitask = "enqueue"
)

// Valid reports whether s names a strategy; "" is valid (reject).
func (s Multitask) Valid() bool {
	switch s {
	case "", MultitaskReject, MultitaskInterrupt, MultitaskRollback, MultitaskEnqueue:
		return true
	}
	return false
}

// multitaskAttempts bounds how often a start that interrupts tries
// again when another run took the conversation between its cancel and
// its start.
const multitaskAttempts = 3

// startInterrupting is Start for MultitaskInterrupt and
// MultitaskRollback: the conversation's active run is cancelled and
// waited for, then the message starts (rolled back: in place of the
// cancelled turn).
func (m *Service) startInterrupting(ctx context.Context, req StartRequest) (*Run, *Subscription, error) {
	for attempt := 1; ; attempt++ {
		rn, sub, err := m.start(ctx, req)
		if !errors.Is(err, store.ErrRunActive) || attempt == multitaskAttempts {
			return rn, sub, err
		}
		last, lerr := m.st.LatestRun(ctx, req.UserID, req.ConversationID)
		if lerr != nil {
			return nil, nil, lerr
		}
		if !last.Active() {
			continue // it ended meanwhile
		}
		if err := m.interrupt(ctx, last); err != nil {
			return nil, nil, err
		}
		if req.Multitask == MultitaskRollback {
			req.Edits, req.supersedes = "", last.ID
			if m.turnStored(ctx, last) {
				req.Edits = last.ID
			}
		}
	}
}

// interrupt cancels the active run r, wherever it runs or waits, and
// returns once the store records its end. The messages queued behind it
// go too: the user chose to move on now.
func (m *Service) interrupt(ctx context.Context, r store.Run) error {
	if err := m.st.DropQueuedRuns(ctx, r.UserID, r.ConversationID); err != nil {
		return fmt.Errorf("runs: interrupt run %s: %w", r.ID, err)
	}
	if err := m.cancelRun(ctx, r.UserID, r.ConversationID, r.ID); err != nil && !errors.Is(err, ErrNothingToRun) {
		return fmt.Errorf("runs: interrupt run %s: %w", r.ID, err)
	}
	// A run of another process ends there; the store tells when.
	t := time.NewTicker(clusterPoll)
	defer t.Stop()
	for {
		cur, err := m.st.GetRun(ctx, r.UserID, r.ID)
		if err != nil {
			return fmt.Errorf("runs: interrupt run %s: %w", r.ID, err)
		}
		if !cur.Active() {
			return nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// turnStored reports whether the agent stored the start of run r's turn,
// so that a rollback reruns from the state before it; a run cancelled
// before its first step left nothing to take out of the history.
func (m *Service) turnStored(ctx context.Context, r store.Run) bool {
	snap, err := m.agent.State(ctx, r.ConversationID)
	return err == nil && r.RequestID != "" && snap.State.Input.RequestID == r.RequestID
}

// QueuedError is Start's answer to a message it queued
// (MultitaskEnqueue): it is not a failure, and the caller tells its
// client where the message waits.
type QueuedError struct {
	Queued QueuedRun
}

func (e *QueuedError) Error() string {
	return fmt.Sprintf("runs: the message waits at position %d behind the conversation's run, as run %s", e.Queued.Position, e.Queued.ID)
}

// startOrEnqueue is Start for MultitaskEnqueue: the message starts at once
// on an idle conversation; otherwise it is stored at the end of the
// conversation's queue and starts once the runs before it have ended
// (see startQueued), and a *QueuedError says so.
func (m *Service) startOrEnqueue(ctx context.Context, req StartRequest) (*Run, *Subscription, error) {
	rn, sub, err := m.start(ctx, req)
	if !errors.Is(err, store.ErrRunActive) {
		return rn, sub, err
	}
	if err := m.refusing(); err != nil {
		return nil, nil, err
	}
	in := req.input()
	// The quota's rest when the message is queued is its run's budget:
	// the run may start after the month's rest has shrunk, and spend
	// that much beyond it at most.
	if err := m.quota(ctx, req.UserID, &in); err != nil {
		return nil, nil, err
	}
	input, err := json.Marshal(startInput{Input: in})
	if err != nil {
		return nil, nil, fmt.Errorf("runs: enqueue: %w", err)
	}
	q, err := m.st.EnqueueRun(ctx, store.NewQueuedRun{UserID: req.UserID, ConversationID: req.ConversationID,
		UserMessage: req.Input.Message, RequestID: req.RequestID, Input: input, Model: m.modelOf(req.Input.Model)})
	if err != nil {
		return nil, nil, fmt.Errorf("runs: enqueue: %w", err)
	}
	// The run may have ended between the refused start and the enqueue,
	// its end finding the queue empty: whoever comes after the other
	// starts the queue's first.
	rn, sub, err = m.startQueued(ctx, req.ConversationID, &req)
	switch {
	case err != nil:
		return nil, nil, err
	case rn == nil:
		return nil, nil, &QueuedError{Queued: q}
	case rn.id != q.ID:
		// Another message queued before this one started; this one waits.
		sub.Close()
		if q, err = m.st.GetQueuedRun(ctx, req.UserID, q.ID); err != nil {
			return nil, nil, fmt.Errorf("runs: enqueue: %w", err)
		}
		return nil, nil, &QueuedError{Queued: q}
	}
	return rn, sub, nil
}

// startQueued starts the first message of the conversation's queue, if
// no run of it is active, and returns its run (nil when none started);
// with subscribe set, the caller is subscribed to it as Start does. A
// message starts once, whichever process starts it (see
// store.Queue.StartQueuedRun); the run is stored with its input, so a
// process that dies before it drives it leaves it to Recover.
func (m *Service) startQueued(ctx context.Context, conversationID string, subscribe *StartRequest) (*Run, *Subscription, error) {
	m.gate.RLock()
	defer m.gate.RUnlock()
	if err := m.refusing(); err != nil {
		return nil, nil, err
	}
	r, err := m.st.StartQueuedRun(ctx, conversationID, m.cfg.Owner)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrRunActive) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("runs: start the queued run of %s: %w", conversationID, err)
	}
	raw, err := m.st.RunInput(ctx, r.UserID, r.ID)
	var s startInput
	if err == nil {
		err = json.Unmarshal(raw, &s)
	}
	if err != nil {
		// Stored running with its input: Recover starts it, or fails it.
		return nil, nil, fmt.Errorf("runs: the input of queued run %s: %w", r.ID, err)
	}
	m.reserve(r.UserID, true)
	rn := m.newRun(ctx, r)
	rn.log.LogAttrs(ctx, slog.LevelInfo, "a queued message starts")
	return rn, m.launch(rn, m.first(r, s), true, subscribe), nil
}

// nextQueued starts what waits in the queue of a conversation whose turn
// has just ended (see Run.turnOver).
func (m *Service) nextQueued(rn *Run) {
	ctx := m.life
	waits := rn.queued
	var err error
	if !rn.queueSeen {
		var q []QueuedRun
		q, err = m.st.QueuedRuns(ctx, rn.userID, rn.conversationID)
		waits = len(q) > 0
	}
	if err == nil && waits {
		_, _, err = m.startQueued(ctx, rn.conversationID, nil)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, ErrShuttingDown) {
		rn.log.LogAttrs(ctx, slog.LevelError, "starting the conversation's queued message failed; the next start or recovery does",
			slog.Any("error", err))
	}
}

// startIdleQueues starts the first queued message of every conversation
// with no active run: what a process that died between a run's end and
// the next start left waiting (Recover). It returns how many started.
func (m *Service) startIdleQueues(ctx context.Context) (int, error) {
	heads, err := m.st.IdleQueues(ctx, 0)
	if err != nil {
		return 0, fmt.Errorf("runs: recover queued messages: %w", err)
	}
	n := 0
	var errs []error
	for _, q := range heads {
		rn, _, err := m.startQueued(ctx, q.ConversationID, nil)
		if rn != nil {
			n++
		}
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// Queued returns the user's message that waits in its conversation's
// queue, with its position. Errors: store.ErrNotFound (unknown, another
// user's, started or cancelled).
func (m *Service) Queued(ctx context.Context, user, id string) (QueuedRun, error) {
	return m.st.GetQueuedRun(ctx, user, id)
}

// QueuedRuns returns the messages waiting in the conversation's queue,
// first first. Errors: store.ErrNotFound.
func (m *Service) QueuedRuns(ctx context.Context, user, conversationID string) ([]QueuedRun, error) {
	return m.st.QueuedRuns(ctx, user, conversationID)
}

// CancelQueued takes the user's queued message out of its queue: it will
// not run. Errors: store.ErrNotFound (unknown, another user's, started or
// cancelled already).
func (m *Service) CancelQueued(ctx context.Context, user, id string) error {
	return m.st.CancelQueuedRun(ctx, user, id)
}

// AwaitQueued waits until the user's queued message id has started and
// returns its run; store.ErrNotFound when it was cancelled (or never
// queued). The store is read every clusterPoll: the message may start on
// any process.
func (m *Service) AwaitQueued(ctx context.Context, user, id string) (RunRecord, error) {
	t := time.NewTicker(clusterPoll)
	defer t.Stop()
	for {
		r, err := m.st.GetRun(ctx, user, id)
		if !errors.Is(err, store.ErrNotFound) {
			return r, err
		}
		if _, err := m.st.GetQueuedRun(ctx, user, id); err != nil {
			// Gone from the queue: started just now, or cancelled.
			return m.st.GetRun(ctx, user, id)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return RunRecord{}, ctx.Err()
		}
	}
}
