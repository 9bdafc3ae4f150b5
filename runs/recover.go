package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// Shutdown refuses new runs, stops the live ones at their next checkpoint
// (their streams end with run.interrupted, reason shutdown, and Recover
// continues them at the next start), parks runs waiting for approvals,
// and ends every Follow. It waits for ctx's end at most.
func (m *Service) Shutdown(ctx context.Context) error {
	err := m.shutdown(ctx)
	m.end()
	m.bg.Wait()
	return err
}

// Recover continues the runs of users a previous process left: runs
// still running in the store under another owner (a shutdown or a
// crash) continue from their last checkpoint, and parked runs whose
// approvals or questions were answered without being resumed are
// resumed, and the first queued message of a conversation whose turn
// ended as its process died starts. Call it once at start, before
// serving. Without a Cluster it takes over every running run it did not start, so no other live
// process may share the store; with one it takes only the runs of
// processes that are gone (Cluster.ClaimOrphans), as every live process
// keeps doing every ClaimInterval. It returns how many runs it
// continued or started.
func (m *Service) Recover(ctx context.Context, users []string) (int, error) {
	n := 0
	var errs []error
	for _, user := range users {
		page := store.Page{Limit: store.MaxLimit}
		for {
			p, err := m.st.ListConversations(ctx, user, page)
			if err != nil {
				return n, fmt.Errorf("runs: recover: %w", err)
			}
			for _, c := range p.Conversations {
				if c.Status != store.RunRunning && c.Status != store.RunInterrupted {
					continue
				}
				ok, err := m.recoverConversation(ctx, user, c.ID)
				if err != nil {
					errs = append(errs, err)
				}
				if ok {
					n++
				}
			}
			if p.NextCursor == "" {
				break
			}
			page.Cursor = p.NextCursor
		}
	}
	var (
		started int
		err     error
	)
	if m.cfg.Cluster != nil {
		started, err = m.claim(ctx) // the queues too
	} else {
		started, err = m.startIdleQueues(ctx)
	}
	return n + started, errors.Join(append(errs, err)...)
}

func (m *Service) recoverConversation(ctx context.Context, user, conversationID string) (bool, error) {
	r, err := m.st.LatestRun(ctx, user, conversationID)
	if err != nil || r.Superseded {
		return false, err
	}
	switch {
	case r.Status == store.RunRunning && r.Owner != m.cfg.Owner && m.cfg.Cluster == nil:
		return true, m.continueRun(ctx, r)
	case r.Status == store.RunInterrupted && r.InterruptReason != events.PendingClarification:
		return m.resumeAnswered(ctx, r)
	}
	return false, nil
}

// continueRun takes over a run whose process is gone: the agent
// continues from the last checkpoint. A tool's question it left pending
// stays so: the tool asks it again under the same id, and an answer given
// meanwhile is its answer. A run whose process died before the agent
// stored anything of it starts again from the input it was stored with;
// continuing the conversation's last checkpoint would take up the turn
// before it.
func (m *Service) continueRun(ctx context.Context, r store.Run) error {
	m.gate.RLock()
	defer m.gate.RUnlock()
	if err := m.refusing(); err != nil {
		return err
	}
	m.reserve(r.UserID, true)
	rn := m.newRun(ctx, r)
	rn.recovered = true
	rn.log.LogAttrs(ctx, slog.LevelInfo, "continuing a run whose process is gone", slog.String("owner", r.Owner))
	// A run whose process died before any of its events was stored (a
	// run nobody streams lets them wait; see outbox) still begins with
	// run.started.
	m.launch(rn, func(ctx context.Context) iter.Seq2[events.Event, error] {
		first, err := m.takeUp(ctx, r)
		if err == nil {
			return first(ctx)
		}
		// Ended as an agent call's failure is: a lost database strands
		// the run until it is back, a shutdown leaves it to the next.
		var end events.Payload = &events.RunFailed{Error: events.ErrorInfo{Code: events.CodeInternal, Message: "taking up the run failed"}}
		if ctx.Err() != nil {
			end = &events.RunCancelled{}
		}
		return func(yield func(events.Event, error) bool) { yield(events.Event{Type: end.EventType(), Data: end}, err) }
	}, r.LastSeq == 0, nil)
	return nil
}

// takeUp is the agent call that goes on with the run r a gone process
// left: Continue, once the run has a checkpoint, else the call that
// starts it, from the input the store kept. A run stored without an
// input (by an older version) continues as it always did.
func (m *Service) takeUp(ctx context.Context, r store.Run) (func(context.Context) iter.Seq2[events.Event, error], error) {
	cont := func(ctx context.Context) iter.Seq2[events.Event, error] {
		return m.agent.Continue(ctx, r.ConversationID)
	}
	began, err := m.agent.Began(ctx, r.ConversationID, r.ID)
	if err != nil || began {
		return cont, err
	}
	raw, err := m.st.RunInput(ctx, r.UserID, r.ID)
	if err != nil || raw == nil {
		return cont, err
	}
	var s startInput
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("runs: the stored input of run %s: %w", r.ID, err)
	}
	m.log.LogAttrs(ctx, slog.LevelInfo, "starting again a run that had stored nothing", slog.String("run_id", r.ID))
	return m.first(r, s), nil
}

// resumeAnswered resumes a parked run whose approval, tool's question or
// uncertain call the store has answered but whose agent still waits (the process
// stopped in between).
func (m *Service) resumeAnswered(ctx context.Context, r store.Run) (bool, error) {
	pending, err := m.agent.Pending(ctx, r.ConversationID)
	if err != nil {
		return false, err
	}
	for _, p := range pending {
		kind, id := events.PendingApproval, p.ID
		switch p.Kind {
		case events.PendingApproval:
		case events.PendingElicitation:
			kind, id = events.PendingElicitation, p.ElicitationID
		case events.PendingUncertainCall:
			kind, id = events.PendingUncertainCall, p.UncertainCallID
		default:
			continue // a clarification is answered by the next message, which starts a run of its own
		}
		h, err := m.st.GetHumanRequest(ctx, kind, r.UserID, id)
		if err != nil || !h.Status.Answered() {
			continue
		}
		return true, m.resumeWith(ctx, h)
	}
	return false, nil
}
