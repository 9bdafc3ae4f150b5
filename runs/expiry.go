package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/trellis-ai/trellis/events"
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
	e := m.cfg.Tools.ApprovalExpiry(tool)
	if e.Timeout <= 0 {
		return nil, ""
	}
	at := time.Now().Add(e.Timeout)
	return &at, e.Outcome
}

// schedule asks for Expire at the stored approval's deadline, if it has
// one. Scheduling one twice is harmless (Config.ScheduleExpiry keeps one
// per request), so a recovered run that asks again schedules again: a
// process that died between storing the approval and scheduling it
// leaves no deadline unkept.
func (m *Service) schedule(ctx context.Context, rn *Run, a store.HumanRequest) {
	if a.ExpiresAt == nil || a.Status != store.HumanPending || m.cfg.ScheduleExpiry == nil {
		return
	}
	if err := m.cfg.ScheduleExpiry(ctx, a.UserID, a.ID, *a.ExpiresAt); err != nil {
		rn.log.LogAttrs(ctx, slog.LevelError, "scheduling an approval's deadline failed; it waits until someone answers",
			slog.String("approval_id", a.ID), slog.Any("error", err))
	}
}

// showDeadlines puts the deadlines of the approvals a run parks on into
// its run.interrupted, as the store keeps them.
func (m *Service) showDeadlines(rn *Run, t *events.RunInterrupted) {
	ctx := context.WithoutCancel(rn.ctx)
	for i := range t.Pending {
		p := &t.Pending[i]
		if p.Kind != events.PendingApproval {
			continue
		}
		if a, err := m.st.GetHumanRequest(ctx, store.KindApproval, rn.userID, p.ID); err == nil {
			p.ExpiresAt, p.OnExpiry = a.ExpiresAt, a.OnExpiry
		}
	}
}

// Expire applies the outcome chosen for the user's approval id once its
// deadline has passed with nobody answering: reject and approve are
// recorded as the decision (marked timed out) and handed to the run as an
// answer is (AnswerApproval); cancel is recorded as expired and the run
// is cancelled (Cancel). The run's events begin with approval.expired.
// It is serialised with answers and cancels, and the record decides as
// for two answers: of a person's answer and the deadline exactly one
// wins, and the deadline does nothing to a request answered, cancelled
// or gone. Called again after a call that stopped part-way (a crash), it
// finishes what that call began, and does nothing more.
// Errors: ErrNotDue before the deadline; the store's and the resuming
// run's (ErrShuttingDown, ErrUnavailable…): call it again.
func (m *Service) Expire(ctx context.Context, user, id string) error {
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	a, err := m.st.GetHumanRequest(ctx, store.KindApproval, user, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted with its conversation
	}
	if err != nil {
		return fmt.Errorf("runs: expire approval %s: %w", id, err)
	}
	switch {
	case a.ExpiresAt == nil:
		return nil
	case a.Status == store.HumanPending:
		if wait := time.Until(*a.ExpiresAt); wait > 0 {
			return fmt.Errorf("runs: expire approval %s: %w (%s to go)", id, ErrNotDue, wait.Round(time.Millisecond))
		}
		m.mu.Lock()
		rn := m.byConv[a.ConversationID]
		cancelling := rn != nil && rn.id == a.RunID && rn.cancelling
		m.mu.Unlock()
		if cancelling {
			return nil // the user's cancel came first: it ends the run and expires the approval
		}
		a, err = m.st.ResolveHumanRequest(ctx, user, id, store.DeadlineAnswer{Outcome: a.OnExpiry})
		if errors.Is(err, store.ErrAlreadyResolved) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("runs: expire approval %s: %w", id, err)
		}
		m.log.LogAttrs(ctx, slog.LevelInfo, "an approval expired", slog.String("approval_id", id), slog.String("run_id", a.RunID),
			slog.String("outcome", string(a.OnExpiry)))
	case !a.TimedOut:
		return nil // answered by a person, or its run ended first
	}
	if a.OnExpiry == events.ExpiryCancel {
		_, err = m.cancelLocked(ctx, user, a.ConversationID, a.RunID, true)
		if errors.Is(err, ErrNothingToRun) || errors.Is(err, store.ErrNotFound) {
			return nil // ended already
		}
	} else {
		err = m.approvalAnsweredLocked(ctx, a, true)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrRunActive) || errors.Is(err, store.ErrNotFound) {
			return nil // resumed already, or its run moved on
		}
	}
	if err != nil {
		return fmt.Errorf("runs: expire approval %s: %w", id, err)
	}
	return nil
}

// expiredOf is the approval.expired of the approval a run's deadline
// decided with a, nil for an answer a person gave.
func expiredOf(a store.HumanRequest) *events.ApprovalExpired {
	if !a.TimedOut || a.ExpiresAt == nil {
		return nil
	}
	return &events.ApprovalExpired{ApprovalID: a.ID, Kind: events.PendingApproval, Outcome: a.OnExpiry, ExpiresAt: *a.ExpiresAt}
}

// cancelledByDeadline is the approval.expired of the approval the
// conversation's run waits on whose deadline cancelled the run; nil
// when a person cancelled it.
func (m *Service) cancelledByDeadline(ctx context.Context, conversationID string) *events.ApprovalExpired {
	rn := runFrom(ctx)
	if rn == nil {
		return nil
	}
	pending, err := m.agent.Pending(ctx, conversationID)
	if err != nil {
		return nil
	}
	for _, p := range pending {
		if p.Kind != events.PendingApproval {
			continue
		}
		a, err := m.st.GetHumanRequest(ctx, store.KindApproval, rn.userID, p.ID)
		if err == nil && a.RunID == rn.id && a.OnExpiry == events.ExpiryCancel && a.Status == store.HumanExpired {
			return expiredOf(a)
		}
	}
	return nil
}
