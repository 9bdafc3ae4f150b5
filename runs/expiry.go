package runs

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
)

// ErrNotDue: Expire was called for a request whose deadline has not
// come yet; call it again then.
var ErrNotDue = errors.New("runs: the request's deadline has not come")

// deadline is the deadline of a new approval of tool, and what happens
// then, under the tools' approval rules (operators.Provider's
// ApprovalExpiry); none without Config.ScheduleExpiry, which nothing
// would act on.
func (m *Service) deadline(tool string) (*time.Time, events.ExpiryOutcome) {
	if m.cfg.ScheduleExpiry == nil || m.cfg.Tools == nil {
		return nil, ""
	}
	return m.deadlineOf(m.cfg.Tools.ApprovalExpiry(tool))
}

// questionDeadline is the deadline of a new question the tool source
// asks the user (an elicitation), and what happens then
// (operators.Provider's ElicitationExpiry); none without
// Config.ScheduleExpiry.
func (m *Service) questionDeadline(source string) (*time.Time, events.ExpiryOutcome) {
	if m.cfg.ScheduleExpiry == nil || m.cfg.Tools == nil {
		return nil, ""
	}
	return m.deadlineOf(m.cfg.Tools.ElicitationExpiry(source))
}

// deadlineOf is the deadline e sets for a new human request, and what
// happens then; none without Config.ScheduleExpiry or a timeout. The
// tools' rules come through deadline and questionDeadline; the kinds
// whose expiry the service's configuration sets (a clarification, an
// uncertain call) pass theirs.
func (m *Service) deadlineOf(e operators.Expiry) (*time.Time, events.ExpiryOutcome) {
	if m.cfg.ScheduleExpiry == nil || e.Timeout <= 0 {
		return nil, ""
	}
	at := time.Now().Add(e.Timeout)
	return &at, e.Outcome
}

// schedule asks for Expire at the stored request's deadline, if it has
// one. Scheduling one twice is harmless (Config.ScheduleExpiry keeps one
// per request), so a recovered run that asks again schedules again: a
// process that died between storing the approval and scheduling it
// leaves no deadline unkept.
func (m *Service) schedule(ctx context.Context, rn *Run, a store.HumanRequest) {
	if a.ExpiresAt == nil || a.Status != store.HumanPending || m.cfg.ScheduleExpiry == nil {
		return
	}
	if err := m.cfg.ScheduleExpiry(ctx, a.Kind, a.UserID, a.ID, *a.ExpiresAt); err != nil {
		rn.log.LogAttrs(ctx, slog.LevelError, "scheduling a deadline failed; the request waits until someone answers",
			slog.String("kind", string(a.Kind)), slog.String("id", a.ID), slog.Any("error", err))
	}
}

// showDeadlines puts the deadlines of the human requests a run parks
// on into its run.interrupted, as the store keeps them.
func (m *Service) showDeadlines(rn *Run, t *events.RunInterrupted) {
	ctx := context.WithoutCancel(rn.ctx)
	for i := range t.Pending {
		p := &t.Pending[i]
		if a, err := m.st.GetHumanRequest(ctx, p.Kind, rn.userID, expiringID(*p)); err == nil {
			p.ExpiresAt, p.OnExpiry = a.ExpiresAt, a.OnExpiry
		}
	}
}

// expiringID is the id of the human request p waits on.
func expiringID(p events.Pending) string {
	switch p.Kind {
	case events.PendingElicitation:
		return p.ElicitationID
	case events.PendingUncertainCall:
		return p.UncertainCallID
	}
	return p.ID
}

// Expire applies the outcome chosen for the user's human request of kind
// once its deadline has passed with nobody answering. An approval's
// reject and approve are recorded as the decision (marked timed out) and
// handed to the run as an answer is (AnswerApproval); an elicitation's
// decline is recorded as declined and handed to the waiting tool, or to
// the run parked on it, as the user's decline is (AnswerElicitation); a
// clarification's continue resumes the run that asked, the agent going
// on without an answer; an uncertain call's skip or fail is recorded as
// that decision and handed to the run parked on it as a person's is
// (AnswerUncertainCall); cancel is recorded as expired and the run is
// cancelled (Cancel). The run's events begin with approval.expired,
// elicitation.expired, clarification.expired or uncertain_call.expired.
// It is serialised with answers and cancels, and the record decides as
// for two answers: of a person's
// answer and the deadline exactly one wins, and the deadline does
// nothing to a request answered, cancelled or gone. Called again after a
// call that stopped part-way (a crash), it finishes what that call
// began, and does nothing more.
// Errors: ErrNotDue before the deadline; the store's and the resuming
// run's (ErrShuttingDown, ErrUnavailable…): call it again.
func (m *Service) Expire(ctx context.Context, kind events.PendingKind, user, id string) error {
	if kind == events.PendingUncertainCall {
		// As for a person's decision, the run that asks has parked
		// before the deadline's is taken up; waited for before resumeMu,
		// which parking takes.
		if h, err := m.st.GetHumanRequest(ctx, kind, user, id); err == nil {
			if err := parked(ctx, m.parking(h)); err != nil {
				return fmt.Errorf("runs: expire %s %s: %w", kind, id, err)
			}
		}
	}
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	a, err := m.st.GetHumanRequest(ctx, kind, user, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted with its conversation
	}
	if err != nil {
		return fmt.Errorf("runs: expire %s %s: %w", kind, id, err)
	}
	switch {
	case a.ExpiresAt == nil:
		return nil
	case a.Status == store.HumanPending:
		if wait := time.Until(*a.ExpiresAt); wait > 0 {
			return fmt.Errorf("runs: expire %s %s: %w (%s to go)", kind, id, ErrNotDue, wait.Round(time.Millisecond))
		}
		m.mu.Lock()
		rn := m.byConv[a.ConversationID]
		cancelling := rn != nil && rn.id == a.RunID && rn.cancelling
		m.mu.Unlock()
		if cancelling {
			return nil // the user's cancel came first: it ends the run and expires the request
		}
		if kind == events.PendingElicitation {
			if handled, err := m.expireWaiting(ctx, a); handled {
				return err
			}
		}
		a, err = m.st.ResolveHumanRequest(ctx, user, id, store.DeadlineAnswer{Of: kind, Outcome: a.OnExpiry})
		if errors.Is(err, store.ErrAlreadyResolved) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("runs: expire %s %s: %w", kind, id, err)
		}
		m.log.LogAttrs(ctx, slog.LevelInfo, "a human request expired", slog.String("kind", string(kind)), slog.String("id", id),
			slog.String("run_id", a.RunID), slog.String("outcome", string(a.OnExpiry)))
	case !a.TimedOut:
		return nil // answered by a person, or its run ended first
	}
	switch {
	case a.OnExpiry == events.ExpiryCancel:
		if forwarded, err := m.cancelElsewhere(ctx, a); forwarded {
			return err
		}
		m.announceExpiry(ctx, a)
		_, err = m.cancelLocked(ctx, user, a.ConversationID, a.RunID, true)
		if errors.Is(err, ErrNothingToRun) || errors.Is(err, store.ErrNotFound) {
			return nil // ended already
		}
	case kind == events.PendingElicitation:
		err = m.elicitationExpiredLocked(ctx, a)
	case kind == events.PendingClarification:
		err = m.clarificationExpiredLocked(ctx, a)
	case kind == events.PendingUncertainCall:
		err = m.resumeWith(ctx, a)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrRunActive) || errors.Is(err, store.ErrNotFound) {
			return nil // resumed already, or its run moved on
		}
	default:
		err = m.approvalAnsweredLocked(ctx, a, true)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrRunActive) || errors.Is(err, store.ErrNotFound) {
			return nil // resumed already, or its run moved on
		}
	}
	if err != nil {
		return fmt.Errorf("runs: expire %s %s: %w", kind, id, err)
	}
	return nil
}

// errLeftRoom: a question left the waiting room as its deadline came,
// and the record does not say yet how; Expire is called again.
var errLeftRoom = errors.New("the question left the waiting room unrecorded")

// expireWaiting applies the deadline of a pending elicitation whose tool
// waits in this process. The waiting room decides between the deadline
// and the user's answer there, as it does between two answers, and the
// tool records what it got (a deadline's outcome as timed out). It
// reports false when no tool waits here: the record decides then.
// m.resumeMu is held.
func (m *Service) expireWaiting(ctx context.Context, e store.HumanRequest) (bool, error) {
	// As an answer does: the question's event may come before its tool
	// is in the room, and a deadline that found the room empty would
	// leave the record to decide while the tool goes on to wait here.
	m.awaitElicitation(ctx, e)
	if e.OnExpiry == events.ExpiryCancel {
		return m.cancelWaiting(ctx, e)
	}
	x := &events.ElicitationExpired{ElicitationID: e.ID, Kind: events.PendingElicitation, Outcome: e.OnExpiry, ExpiresAt: *e.ExpiresAt}
	err := m.asks.respond(e.UserID, operators.ElicitResponse{ElicitationID: e.ID, Action: events.ElicitDecline, Expired: x})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case errors.Is(err, store.ErrAlreadyResolved):
		// The question left the room: an answer reached the tool, or
		// else nobody answered in time and the run parked on it, for the
		// record to decide. An answer is recorded right after it reached
		// the tool (its run may have ended meanwhile); until the record
		// shows it, the job tries again, and the deadline never wins.
		if h, err := m.st.GetHumanRequest(ctx, events.PendingElicitation, e.UserID, e.ID); err == nil && h.Status != store.HumanPending {
			return true, nil
		}
		if !m.asks.answered(e.ID) {
			return false, nil
		}
		return true, fmt.Errorf("runs: expire elicitation %s: %w", e.ID, errLeftRoom)
	case err != nil:
		return true, fmt.Errorf("runs: expire elicitation %s: %w", e.ID, err)
	}
	// The tool records it too; whichever comes second finds it resolved.
	if _, err := m.st.ResolveHumanRequest(ctx, e.UserID, e.ID, store.DeadlineAnswer{Of: events.PendingElicitation, Outcome: e.OnExpiry}); err != nil &&
		!errors.Is(err, store.ErrAlreadyResolved) {
		m.log.LogAttrs(ctx, slog.LevelError, "recording an elicitation's expiry failed", slog.String("elicitation_id", e.ID), slog.Any("error", err))
	}
	m.log.LogAttrs(ctx, slog.LevelInfo, "a human request expired", slog.String("kind", string(e.Kind)), slog.String("id", e.ID),
		slog.String("run_id", e.RunID), slog.String("outcome", string(e.OnExpiry)))
	return true, nil
}

// cancelWaiting applies a cancelling deadline to a pending elicitation
// whose tool waits in this process. The record decides between the
// deadline and an answer given anywhere; then the question is taken from
// the waiting room unanswered, elicitation.expired is sent and the run
// is cancelled, so the tool never hears its question cancelled while its
// run goes on (it could reply, or act, before the run ends). It reports
// false when no tool waits here, or a person's answer won: Expire goes
// on as for a request the record decides. m.resumeMu is held.
func (m *Service) cancelWaiting(ctx context.Context, e store.HumanRequest) (bool, error) {
	if !m.asks.waiting(e.UserID, e.ID) {
		if m.asks.answered(e.ID) {
			// An answer reached the tool here; its record follows.
			return true, fmt.Errorf("runs: expire elicitation %s: %w", e.ID, errLeftRoom)
		}
		return false, nil
	}
	h, err := m.st.ResolveHumanRequest(ctx, e.UserID, e.ID, store.DeadlineAnswer{Of: events.PendingElicitation, Outcome: e.OnExpiry})
	if errors.Is(err, store.ErrAlreadyResolved) {
		return false, nil // answered elsewhere: the answer reaches the tool by its notice
	}
	if err != nil {
		return true, fmt.Errorf("runs: expire elicitation %s: %w", e.ID, err)
	}
	m.log.LogAttrs(ctx, slog.LevelInfo, "a human request expired", slog.String("kind", string(e.Kind)), slog.String("id", e.ID),
		slog.String("run_id", e.RunID), slog.String("outcome", string(e.OnExpiry)))
	// A question that left the room meanwhile (its run parks on it) is
	// the parked run's, which the cancel below abandons.
	if err := m.asks.take(e.UserID, e.ID); err == nil {
		m.announceExpiry(ctx, h)
	}
	_, err = m.cancelLocked(ctx, e.UserID, e.ConversationID, e.RunID, true)
	if errors.Is(err, ErrNothingToRun) || errors.Is(err, store.ErrNotFound) {
		return true, nil // ended already
	}
	if err != nil {
		return true, fmt.Errorf("runs: expire elicitation %s: %w", e.ID, err)
	}
	return true, nil
}

// elicitationExpiredLocked hands the decline an elicitation's deadline
// recorded to the tool waiting for it: here, in another process (told
// with a notice; it reads the record), or, when its run is parked on
// it, by resuming the run. A tool or run that moved on leaves nothing to
// do. m.resumeMu is held.
func (m *Service) elicitationExpiredLocked(ctx context.Context, e store.HumanRequest) error {
	err := m.asks.respond(e.UserID, responseOf(e))
	if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrAlreadyResolved) {
		return err
	}
	r, err := m.st.GetRun(ctx, e.UserID, e.RunID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if owner := m.elsewhere(r); owner != "" {
		return m.notify(ctx, owner, store.NoticeElicitation, r, e.ID)
	}
	return m.elicitationAnsweredLocked(ctx, e)
}

// cancelElsewhere hands a cancelling deadline of an elicitation whose
// run another live process owns to that process, by a cancel notice
// naming the elicitation: the owner takes the question from its waiting
// room, sends elicitation.expired and cancels the run (see
// expiredElsewhere). It reports false when no other process owns the
// run.
func (m *Service) cancelElsewhere(ctx context.Context, e store.HumanRequest) (bool, error) {
	if e.Kind != events.PendingElicitation {
		return false, nil
	}
	r, err := m.st.GetRun(ctx, e.UserID, e.RunID)
	if err != nil {
		return false, nil // gone, or unreadable: cancelLocked reports it
	}
	owner := m.elsewhere(r)
	if owner == "" {
		return false, nil
	}
	if err := m.notify(ctx, owner, store.NoticeCancel, r, e.ID); err != nil {
		return true, fmt.Errorf("runs: expire elicitation %s: %w", e.ID, err)
	}
	return true, nil
}

// expiredElsewhere acts on a cancel notice that names the elicitation
// whose deadline cancelled the run in another process: when its tool
// waits here, the question is taken from the waiting room unanswered and
// elicitation.expired sent before the cancel, once however often the
// notice comes.
func (m *Service) expiredElsewhere(ctx context.Context, n store.Notice) {
	h, err := m.st.GetHumanRequest(ctx, events.PendingElicitation, n.UserID, n.ID)
	if err != nil || h.RunID != n.RunID || h.OnExpiry != events.ExpiryCancel || elicitationExpiredOf(h) == nil {
		return
	}
	if m.asks.take(n.UserID, n.ID) == nil {
		m.announceExpiry(ctx, h)
	}
}

// announceExpiry sends the expired event of a request whose deadline
// cancels a run live in this process, before its run.cancelled; a
// parked run's cancel sends it itself (see cancelledByDeadline).
func (m *Service) announceExpiry(ctx context.Context, h store.HumanRequest) {
	x := expiredEvent(h)
	if x == nil {
		return
	}
	m.mu.Lock()
	rn := m.byConv[h.ConversationID]
	m.mu.Unlock()
	if rn != nil && rn.id == h.RunID && rn.state != stateParking && h.Kind == events.PendingElicitation {
		m.emit(rn, x)
	}
}

// expiredEvent is the expired event of a request its deadline decided:
// approval.expired, elicitation.expired, clarification.expired or
// uncertain_call.expired; nil for one a person answered.
func expiredEvent(h store.HumanRequest) events.Payload {
	if !h.TimedOut || h.ExpiresAt == nil {
		return nil
	}
	switch h.Kind {
	case events.PendingElicitation:
		return elicitationExpiredOf(h)
	case events.PendingClarification:
		return &events.ClarificationExpired{ClarificationID: h.ID, Kind: events.PendingClarification, Outcome: h.OnExpiry, ExpiresAt: *h.ExpiresAt}
	case events.PendingUncertainCall:
		return &events.UncertainCallExpired{UncertainCallID: h.ID, Kind: events.PendingUncertainCall, Outcome: h.OnExpiry, ExpiresAt: *h.ExpiresAt}
	}
	return expiredOf(h)
}

// elicitationExpiredOf is the elicitation.expired of the elicitation a
// deadline decided with e, nil for an answer a person gave.
func elicitationExpiredOf(e store.HumanRequest) *events.ElicitationExpired {
	if !e.TimedOut || e.ExpiresAt == nil {
		return nil
	}
	return &events.ElicitationExpired{ElicitationID: e.ID, Kind: events.PendingElicitation, Outcome: e.OnExpiry, ExpiresAt: *e.ExpiresAt}
}

// expiredOf is the approval.expired of the approval a run's deadline
// decided with a, nil for an answer a person gave.
func expiredOf(a store.HumanRequest) *events.ApprovalExpired {
	if !a.TimedOut || a.ExpiresAt == nil {
		return nil
	}
	return &events.ApprovalExpired{ApprovalID: a.ID, Kind: events.PendingApproval, Outcome: a.OnExpiry, ExpiresAt: *a.ExpiresAt}
}

// cancelledByDeadline is the expired event of the request the
// conversation's run waits on whose deadline cancelled the run; nil when
// a person cancelled it.
func (m *Service) cancelledByDeadline(ctx context.Context, conversationID string) events.Payload {
	rn := runFrom(ctx)
	if rn == nil {
		return nil
	}
	pending, err := m.agent.Pending(ctx, conversationID)
	if err != nil {
		return nil
	}
	for _, p := range pending {
		h, err := m.st.GetHumanRequest(ctx, p.Kind, rn.userID, expiringID(p))
		if err == nil && h.RunID == rn.id && h.OnExpiry == events.ExpiryCancel && h.Status == store.HumanExpired {
			return expiredEvent(h)
		}
	}
	return nil
}

// parking is what closes once the run that asked the human request h,
// live in this process, has parked; nil when it is not live here.
func (m *Service) parking(h store.HumanRequest) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rn := m.byConv[h.ConversationID]; rn != nil && rn.id == h.RunID {
		return rn.done
	}
	return nil
}

// clarificationExpiredLocked goes on with the run parked on the
// clarifying question c whose deadline decided continue (a cancel goes
// as cancelLocked cancels a parked run): the run resumes
// (the one that asked, not a new one: no message answered), its events
// beginning with clarification.expired, and the agent proceeds without
// an answer. A run that moved on (cancelled, superseded by an edit,
// resumed already) is left alone. m.resumeMu is held.
func (m *Service) clarificationExpiredLocked(ctx context.Context, c store.HumanRequest) error {
	r, err := m.st.GetRun(ctx, c.UserID, c.RunID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.Superseded || r.Status != store.RunInterrupted || r.InterruptReason != events.PendingClarification {
		return nil
	}
	err = m.resume(ctx, c.UserID, c.RunID, false, func(ctx context.Context, conversationID string) iter.Seq2[events.Event, error] {
		return m.agent.ClarificationExpired(ctx, conversationID, c.ID, expiredEvent(c))
	})
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrRunActive) {
		return nil // resumed already, or another run took its place
	}
	return err
}
