package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/mcp/elicit"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// Cluster is what several processes sharing one database need of it:
// telling the process that owns a run what a user did, and taking over
// the running runs of processes that are gone. pgstore.Store implements
// it (LISTEN/NOTIFY and advisory locks; see its Listen).
type Cluster interface {
	// Notify sends n to the process n.Owner names; the answer it points
	// to is stored before.
	Notify(ctx context.Context, n store.Notice) error
	// ClaimOrphans makes owner the owner of the running runs of
	// processes that are gone, and returns them.
	ClaimOrphans(ctx context.Context, owner string) ([]store.Run, error)
}

// Notices are the notices other processes send this one: a
// pgstore.Listener listening as Config.Owner. An error other than ctx's
// means this process no longer counts as alive to the others.
type Notices interface {
	Next(ctx context.Context) (store.Notice, error)
}

// DefaultClaimInterval is how often a process of a cluster looks for
// runs of processes that are gone.
const DefaultClaimInterval = 5 * time.Second

// startCluster starts the goroutines of a process in a cluster: one acts
// on notices, one claims orphaned runs. Shutdown ends both.
func (s *Server) startCluster() {
	if s.cfg.Cluster == nil {
		return
	}
	s.bg.Go(s.listen)
	s.bg.Go(s.sweep)
}

// listen acts on the notices sent to this process until the server ends.
// Losing them means the other processes see this one as gone and may
// claim its runs at any moment, so it stops its runs (they stay running
// in the store, for whoever claims them) and takes no new ones; /readyz
// then fails, and the process should be restarted.
func (s *Server) listen() {
	for {
		n, err := s.cfg.Notices.Next(s.life)
		if err != nil {
			if s.life.Err() != nil {
				return
			}
			s.log.LogAttrs(s.life, slog.LevelError, "lost the database session that marks this process alive; stopping its runs for other processes to take over: restart this one",
				slog.String("owner", s.cfg.Owner), slog.Any("error", err))
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
			defer cancel()
			_ = s.runs.shutdown(ctx)
			return
		}
		s.notice(n)
	}
}

// notice acts on one notice: it reads the answer the notice points to and
// hands it to the run live here, as if the request had come to this
// process.
func (s *Server) notice(n store.Notice) {
	ctx := s.life
	var err error
	switch n.Kind {
	case store.NoticeApproval:
		var a store.Approval
		if a, err = s.store.GetApproval(ctx, n.UserID, n.ID); err == nil && decided(a) {
			err = s.runs.approvalAnswered(ctx, a, decisionOf(a), false)
		}
	case store.NoticeCancel:
		_, err = s.runs.cancel(ctx, n.UserID, n.ConversationID, false)
	case store.NoticeElicitation:
		var e store.Elicitation
		if e, err = s.store.GetElicitation(ctx, n.UserID, n.ID); err == nil && e.Status != store.ElicitationPending {
			err = s.elicit.Respond(n.UserID, operators.ElicitResponse{ElicitationID: e.ID, Action: actionOf(e.Status), Content: e.Content})
		}
	case store.NoticeElicitationCancel:
		err = s.elicit.Cancel(n.UserID, n.ID)
	}
	if err != nil {
		// The run may have moved on (ended, timed out, parked): the
		// answer is stored either way.
		s.log.LogAttrs(ctx, slog.LevelInfo, "a notice found nothing to do", slog.String("kind", string(n.Kind)),
			slog.String("run_id", n.RunID), slog.String("id", n.ID), slog.Any("error", err))
	}
}

// sweep claims the running runs of processes that are gone, every
// ClaimInterval, and continues them here.
func (s *Server) sweep() {
	t := time.NewTicker(s.cfg.ClaimInterval)
	defer t.Stop()
	for {
		select {
		case <-s.life.Done():
			return
		case <-t.C:
		}
		if s.runs.draining.Load() {
			return
		}
		if _, err := s.claim(s.life); err != nil && s.life.Err() == nil {
			s.log.LogAttrs(s.life, slog.LevelWarn, "claiming runs of processes that are gone failed", slog.Any("error", err))
		}
	}
}

// claim takes over the running runs of processes that are gone and
// continues them; it returns how many it took.
func (s *Server) claim(ctx context.Context) (int, error) {
	runs, err := s.cfg.Cluster.ClaimOrphans(ctx, s.cfg.Owner)
	errs := []error{err}
	for _, r := range runs {
		errs = append(errs, s.continueRun(ctx, r))
	}
	return len(runs), errors.Join(errs...)
}

// elsewhere returns who runs r elsewhere: the owner of a running run that
// this process does not own, when there is a cluster to tell it; "" when
// nobody but this process can act on r.
func (m *runManager) elsewhere(r store.Run) string {
	if m.cfg.Cluster == nil || r.Status != store.RunRunning || r.Superseded || r.Owner == m.cfg.Owner {
		return ""
	}
	return r.Owner
}

// notify tells the process owner of something done to its run r.
func (m *runManager) notify(ctx context.Context, owner string, kind store.NoticeKind, r store.Run, id string) error {
	return m.cfg.Cluster.Notify(ctx, store.Notice{Kind: kind, Owner: owner, RunID: r.ID,
		ConversationID: r.ConversationID, UserID: r.UserID, ID: id})
}

// elicitationElsewhere takes the answer (or cancel) to an elicitation
// whose tool waits in another process: it checks the content against the
// question's schema here (422 on failure), stores the answer, and tells
// the owner, which hands it to the tool. It reports false when no other
// process runs the elicitation's run.
func (s *Server) elicitationElsewhere(ctx context.Context, user string, e store.Elicitation, ans store.ElicitationAnswer, kind store.NoticeKind) (bool, error) {
	r, err := s.store.GetRun(ctx, user, e.RunID)
	if err != nil {
		return false, nil
	}
	owner := s.runs.elsewhere(r)
	if owner == "" {
		return false, nil
	}
	if err := validAnswer(e, ans); err != nil {
		return true, err
	}
	if _, err := s.store.ResolveElicitation(ctx, user, e.ID, ans); err != nil {
		return true, err
	}
	return true, s.runs.notify(ctx, owner, kind, r, e.ID)
}

// validAnswer checks accepted content against the question's schema.
func validAnswer(e store.Elicitation, ans store.ElicitationAnswer) error {
	if ans.Action != store.ActionAccept {
		return nil
	}
	var schema *jsonschema.Schema
	if json.Unmarshal(e.Schema, &schema) != nil {
		schema = nil
	}
	return elicit.Validate(e.ID, schema, ans.Content)
}

// decided reports whether an approval holds the user's answer.
func decided(a store.Approval) bool {
	return a.Status == store.ApprovalApproved || a.Status == store.ApprovalEdited || a.Status == store.ApprovalRejected
}

// decisionOf is the agent's form of a stored answer.
func decisionOf(a store.Approval) nodes.ApprovalDecision {
	return nodes.ApprovalDecision{ApprovalID: a.ID, Decision: nodes.DecisionKind(a.Decision), Args: a.EditedArgs, Reason: a.Reason}
}

// actionOf is the action a resolved elicitation's status records.
func actionOf(s store.ElicitationStatus) operators.ElicitAction {
	switch s {
	case store.ElicitationAccepted:
		return operators.ElicitAccept
	case store.ElicitationDeclined:
		return operators.ElicitDecline
	}
	return operators.ElicitCancel
}
