package api

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/nodes"
)

// Shutdown refuses new runs, stops the live ones at their next checkpoint
// (their streams end with run.interrupted, reason shutdown, and Recover
// continues them at the next start), parks runs waiting for approvals,
// and ends every stream. It waits for ctx's deadline at most, or
// Config.ShutdownTimeout when ctx has none. Stop the HTTP server from
// accepting connections first (http.Server.Shutdown, concurrently: it
// waits for the streams Shutdown ends).
func (s *Server) Shutdown(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
		defer cancel()
	}
	err := s.runs.shutdown(ctx)
	s.end()
	s.bg.Wait()
	return err
}

// Recover continues the runs a previous process left: runs still running
// in the store under another owner (a shutdown or a crash) continue from
// their last checkpoint, and parked runs whose approvals were answered
// without being resumed are resumed. Call it once at start, before
// serving. Without a Cluster it takes over every running run it did not
// start, so no other live process may share the store; with one it
// takes only the runs of processes that are gone (ClaimOrphans), as
// every live process keeps doing every ClaimInterval. It returns how
// many runs it continued.
func (s *Server) Recover(ctx context.Context) (int, error) {
	users := slices.Sorted(maps.Values(s.cfg.Keys))
	if s.auth.local() {
		users = []string{LocalUser}
	}
	users = slices.Compact(users)
	n := 0
	var errs []error
	for _, user := range users {
		page := store.Page{Limit: store.MaxLimit}
		for {
			p, err := s.store.ListConversations(ctx, user, page)
			if err != nil {
				return n, fmt.Errorf("api: recover: %w", err)
			}
			for _, c := range p.Conversations {
				if c.Status != store.RunRunning && c.Status != store.RunInterrupted {
					continue
				}
				ok, err := s.recoverConversation(ctx, user, c.ID)
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
	if s.cfg.Cluster != nil {
		claimed, err := s.claim(ctx)
		n += claimed
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

func (s *Server) recoverConversation(ctx context.Context, user, conversationID string) (bool, error) {
	r, err := s.store.LatestRun(ctx, user, conversationID)
	if err != nil || r.Superseded {
		return false, err
	}
	switch {
	case r.Status == store.RunRunning && r.Owner != s.cfg.Owner && s.cfg.Cluster == nil:
		return true, s.continueRun(ctx, r)
	case r.Status == store.RunInterrupted && (r.InterruptReason == store.InterruptApproval || r.InterruptReason == store.InterruptElicitation):
		return s.resumeAnswered(ctx, r)
	}
	return false, nil
}

// continueRun takes over a run whose process is gone: the agent
// continues from the last checkpoint. A tool's question it left pending
// stays so: the tool asks it again under the same id, and an answer given
// meanwhile is its answer.
func (s *Server) continueRun(ctx context.Context, r store.Run) error {
	m := s.runs
	m.gate.RLock()
	defer m.gate.RUnlock()
	if err := m.refusing(); err != nil {
		return err
	}
	m.reserve(r.UserID, true)
	rn := m.newRun(ctx, r)
	rn.recovered = true
	rn.log.LogAttrs(ctx, slog.LevelInfo, "continuing a run whose process is gone", slog.String("owner", r.Owner))
	m.launch(rn, func(ctx context.Context) iter.Seq2[nodes.Event, error] {
		return s.agent.Continue(ctx, rn.conversationID)
	}, false, nil)
	return nil
}

// resumeAnswered resumes a parked run whose approval or tool's question
// the store has answered but whose agent still waits (the process
// stopped in between).
func (s *Server) resumeAnswered(ctx context.Context, r store.Run) (bool, error) {
	pending, err := s.agent.Pending(ctx, r.ConversationID)
	if err != nil {
		return false, err
	}
	for _, p := range pending {
		switch p.Kind {
		case nodes.PendingApproval:
			a, err := s.store.GetApproval(ctx, r.UserID, p.ID)
			if err != nil || !decided(a) {
				continue
			}
			d := decisionOf(a)
			return true, s.runs.resume(ctx, r.UserID, r.ID, false, func(ctx context.Context, conversationID string) iter.Seq2[nodes.Event, error] {
				return s.agent.Resume(ctx, conversationID, d)
			})
		case nodes.PendingElicitation:
			e, err := s.store.GetElicitation(ctx, r.UserID, p.ElicitationID)
			if err != nil || !answered(e) {
				continue
			}
			return true, s.runs.resumeElicitation(ctx, e)
		}
	}
	return false, nil
}
