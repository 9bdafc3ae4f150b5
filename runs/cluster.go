package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
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
	// Lost reports whether err, from the store or the checkpointer,
	// means that the connection to the database was lost or could not
	// be made, so that what failed may succeed once the database is
	// back.
	Lost(err error) bool
}

// Notices are the notices other processes send this one: a
// pgstore.Listener listening as Config.Owner. An error from Next other
// than ctx's means this process no longer counts as alive to the others,
// until Reopen succeeds: it takes the owner's session again.
type Notices interface {
	Next(ctx context.Context) (store.Notice, error)
	Reopen(ctx context.Context) error
}

// Backoff of the attempts to take the session again.
const (
	reopenFirst   = 100 * time.Millisecond
	reopenMax     = 5 * time.Second
	reopenTimeout = 10 * time.Second
	// retryTimeout bounds one pass over the stranded runs.
	retryTimeout = 30 * time.Second
)

// DefaultClaimInterval is how often a process of a cluster looks for
// runs of processes that are gone.
const DefaultClaimInterval = 5 * time.Second

// startCluster starts the goroutines of a process in a cluster: one acts
// on notices, one claims orphaned runs and continues stranded ones.
// Shutdown ends both.
func (m *Service) startCluster() {
	if m.cfg.Cluster == nil {
		return
	}
	m.lost.kick = make(chan struct{}, 1)
	m.bg.Go(m.listen)
	m.bg.Go(m.sweep)
}

// listen acts on the notices sent to this process until the server ends.
//
// Losing them means the other processes see this one as gone and may
// claim its runs at any moment, so it stops its runs, which stay running
// in the store with their last checkpoints, and starts no new ones;
// /readyz fails meanwhile. It then takes its session again, retrying
// with backoff: the runs that no other process took over meanwhile are
// its own again, and it continues them (see strand).
func (m *Service) listen() {
	for {
		n, err := m.cfg.Notices.Next(m.life)
		if err == nil {
			m.notice(n)
			continue
		}
		if m.life.Err() != nil {
			return
		}
		m.log.LogAttrs(m.life, slog.LevelError, "lost the database session that marks this process alive; its runs stop, for another process to take over or for this one to continue once it is back",
			slog.String("owner", m.cfg.Owner), slog.Any("error", err))
		m.mu.Lock()
		m.sessionGone = time.Now()
		m.mu.Unlock()
		m.suspend()
		if !m.reopen() {
			return
		}
		m.unsuspend()
		m.mu.Lock()
		m.sessionGone = time.Time{}
		m.mu.Unlock()
		m.log.LogAttrs(m.life, slog.LevelInfo, "took the database session again; continuing the runs no other process took over",
			slog.String("owner", m.cfg.Owner))
	}
}

// reopen takes the process's session again, retrying with backoff until
// it succeeds (true) or the server ends (false).
func (m *Service) reopen() bool {
	b := llm.Backoff{Base: reopenFirst, Max: reopenMax, Retrying: func(err error, _ int, wait time.Duration) {
		m.log.LogAttrs(m.life, slog.LevelWarn, "taking the database session again failed; retrying",
			slog.String("owner", m.cfg.Owner), slog.Duration("retry_in", wait), slog.Any("error", err))
	}}
	return b.Run(m.life, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, reopenTimeout)
		defer cancel()
		return m.cfg.Notices.Reopen(ctx)
	}) == nil
}

// notice acts on one notice: it reads the answer the notice points to and
// hands it to the run live here, as if the request had come to this
// process.
func (m *Service) notice(n store.Notice) {
	ctx := m.life
	var err error
	switch n.Kind {
	case store.NoticeApproval:
		var a store.HumanRequest
		if a, err = m.st.GetHumanRequest(ctx, events.PendingApproval, n.UserID, n.ID); err == nil && a.Status.Answered() {
			err = m.approvalAnswered(ctx, a, false)
		}
	case store.NoticeCancel:
		if n.ID != "" {
			m.expiredElsewhere(ctx, n)
		}
		_, err = m.cancel(ctx, n.UserID, n.ConversationID, "", false)
	case store.NoticeElicitation:
		var e store.HumanRequest
		if e, err = m.st.GetHumanRequest(ctx, events.PendingElicitation, n.UserID, n.ID); err == nil && e.Status != store.HumanPending {
			err = m.asks.respond(n.UserID, responseOf(e))
		}
	case store.NoticeElicitationCancel:
		err = m.asks.cancel(n.UserID, n.ID)
	}
	if err != nil {
		// The run may have moved on (ended, timed out, parked): the
		// answer is stored either way.
		m.log.LogAttrs(ctx, slog.LevelInfo, "a notice found nothing to do", slog.String("kind", string(n.Kind)),
			slog.String("run_id", n.RunID), slog.String("id", n.ID), slog.Any("error", err))
	}
}

// sweep continues the runs stranded here and claims the running runs of
// processes that are gone, every ClaimInterval and as soon as the session
// is taken again, and continues them here. It does
// neither while the process's session is lost.
func (m *Service) sweep() {
	t := time.NewTicker(m.cfg.ClaimInterval)
	defer t.Stop()
	for {
		select {
		case <-m.life.Done():
			return
		case <-t.C:
		case <-m.lost.kick:
		}
		if m.draining.Load() {
			return
		}
		if m.lost.suspended.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(m.life, retryTimeout)
		m.unstrand(ctx)
		cancel()
		if _, err := m.claim(m.life); err != nil && m.life.Err() == nil {
			m.log.LogAttrs(m.life, slog.LevelWarn, "claiming runs of processes that are gone failed", slog.Any("error", err))
		}
	}
}

// stranding is what a process of a cluster keeps of the runs a lost
// database stopped (see strand).
type stranding struct {
	// suspended is set while the process's session is lost: it starts
	// and continues no runs meanwhile.
	suspended atomic.Bool
	// kick wakes the sweep; made by startCluster.
	kick chan struct{}

	mu   sync.Mutex
	runs []*strandedRun
}

// strandedRun is a run stopped by a lost database, with what remains to
// do once it is back.
type strandedRun struct {
	run store.Run // its ID, ConversationID and UserID
	// event is the run's terminal event still to store, and end, when
	// set, its end still to record first; with neither, the run is to be
	// continued from its last checkpoint.
	end   *store.RunEnd
	event *store.NewEvent
}

// lostErr reports whether err says the database went away (see
// Cluster.Lost); never without a Cluster, as a process alone with its
// store has nobody to hand its runs to and nothing to reconnect.
func (m *Service) lostErr(err error) bool {
	return err != nil && m.cfg.Cluster != nil && m.cfg.Cluster.Lost(err)
}

// refusing says why no run may start or continue here now, if one may
// not. Callers hold m.gate.
func (m *Service) refusing() error {
	switch {
	case m.draining.Load():
		return ErrShuttingDown
	case m.lost.suspended.Load():
		return ErrUnavailable
	}
	return nil
}

// suspend stops every live run, as the process's session is lost: each
// is stranded (or, waiting for an approval, parked), and no run starts
// until unsuspend. Answers to parked runs still resume them.
func (m *Service) suspend() {
	m.gate.Lock()
	m.lost.suspended.Store(true)
	m.gate.Unlock()
	m.mu.Lock()
	for _, rn := range m.byConv {
		rn.cancel(errStorageLost)
	}
	m.mu.Unlock()
}

// unsuspend lets runs start again once the session is back, and has the
// sweep continue the stranded ones.
func (m *Service) unsuspend() {
	m.lost.suspended.Store(false)
	m.kickSweep()
}

func (m *Service) kickSweep() {
	select {
	case m.lost.kick <- struct{}{}:
	default:
	}
}

// strand stops a run whose database went away as a shutdown would, but
// without storing anything: the run stays running in the store, owned by
// this process, with its last checkpoint, and the sweep continues it here
// once the database is back, unless another process took it over
// meanwhile. Its streams stay open: a stream whose run is not live here
// reads the store, so it follows the run as it goes on, here or there,
// and ends without a terminal event, for its client to reconnect, only
// if it cannot read the store meanwhile.
func (m *Service) strand(rn *Run) {
	_ = rn.out.drain()
	m.fold(rn)
	rn.log.LogAttrs(rn.ctx, slog.LevelWarn, "the database connection was lost; the run goes on from its last checkpoint once it is back")
	m.detach(rn)
	m.later(&strandedRun{run: store.Run{ID: rn.id, ConversationID: rn.conversationID, UserID: rn.userID}})
}

// endLater ends a run whose end (when end is set) or terminal event could
// not be stored because the database went away: the sweep stores them
// once it is back. Its streams stay open, as for strand.
func (m *Service) endLater(rn *Run, p events.Payload, end *store.RunEnd, status string) {
	data, err := rn.envelope(p)
	if err != nil {
		rn.log.LogAttrs(rn.ctx, slog.LevelError, "encoding the terminal event failed", slog.String("type", p.EventType()), slog.Any("error", err))
		m.detach(rn)
		m.cut(rn)
		return
	}
	m.metrics.RunEnded(status, time.Since(rn.started))
	rn.log.LogAttrs(rn.ctx, slog.LevelWarn, "the database connection was lost as the run ended; its end is stored once it is back",
		slog.String("status", status))
	m.detach(rn)
	m.later(&strandedRun{run: store.Run{ID: rn.id, ConversationID: rn.conversationID, UserID: rn.userID}, end: end,
		event: &store.NewEvent{RunID: rn.id, Type: p.EventType(), Data: data, Owner: m.fence()}})
}

// later hands sr to the sweep, at its next pass: not at once, so that a
// database that comes and goes is not hammered.
func (m *Service) later(sr *strandedRun) {
	m.lost.mu.Lock()
	m.lost.runs = append(m.lost.runs, sr)
	m.lost.mu.Unlock()
}

// unstrand does what remains of the stranded runs; those that the
// database, still away, keeps from it wait for the next sweep.
func (m *Service) unstrand(ctx context.Context) {
	m.lost.mu.Lock()
	todo := m.lost.runs
	m.lost.runs = nil
	m.lost.mu.Unlock()
	var keep []*strandedRun
	for i, sr := range todo {
		err := m.retryStranded(ctx, sr)
		if m.awayAgain(err) || ctx.Err() != nil {
			keep = todo[i:]
			break
		}
		if err != nil {
			m.log.LogAttrs(ctx, slog.LevelError, "a run stranded by a lost database could not go on", slog.String("run_id", sr.run.ID), slog.Any("error", err))
		}
	}
	if len(keep) > 0 {
		m.lost.mu.Lock()
		m.lost.runs = append(keep, m.lost.runs...)
		m.lost.mu.Unlock()
	}
}

// retryStranded continues a stranded run, or stores its end.
func (m *Service) retryStranded(ctx context.Context, sr *strandedRun) error {
	gone := func(err error) bool { return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrNotOwner) }
	if sr.event == nil {
		r, err := m.st.GetRun(ctx, sr.run.UserID, sr.run.ID)
		if gone(err) {
			return nil // deleted
		}
		if err != nil {
			return err
		}
		if r.Status != store.RunRunning || r.Superseded || r.Owner != m.cfg.Owner {
			return nil // it ended, or another process took it over
		}
		return m.continueRun(ctx, r)
	}
	if sr.end != nil {
		// ErrConflict: the run has ended; the first try committed, and
		// only its answer was lost.
		if _, err := m.st.FinishRun(ctx, sr.run.ID, *sr.end); gone(err) {
			return nil // deleted, or taken over: its new owner ends it
		} else if err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
		sr.end = nil
	}
	if _, err := m.st.AppendEvent(ctx, *sr.event); err != nil && !gone(err) {
		return err
	}
	return nil
}

// claim takes over the running runs of processes that are gone and
// continues them; it returns how many it took.
func (m *Service) claim(ctx context.Context) (int, error) {
	runs, err := m.cfg.Cluster.ClaimOrphans(ctx, m.cfg.Owner)
	errs := []error{err}
	for _, r := range runs {
		if err := m.continueRun(ctx, r); m.awayAgain(err) {
			// Claimed, it is this process's: the sweep continues it
			// once the database is back, unless another process has
			// claimed it meanwhile.
			m.later(&strandedRun{run: r})
		} else {
			errs = append(errs, err)
		}
	}
	// A process that died as a turn ended left the next message queued.
	queued, err := m.startIdleQueues(ctx)
	return len(runs) + queued, errors.Join(append(errs, err)...)
}

// awayAgain reports whether err stopped a run from going on only because
// the database went away again: lost, or this process's session lost and
// the process suspended (ErrUnavailable) between the sweep's check and
// the run's start. Such a run stays this process's, running in the store,
// so it must wait for the next sweep rather than be dropped.
func (m *Service) awayAgain(err error) bool {
	return m.lostErr(err) || errors.Is(err, ErrUnavailable)
}

// elsewhere returns who runs r elsewhere: the owner of a running run that
// this process does not own, when there is a cluster to tell it; "" when
// nobody but this process can act on r.
func (m *Service) elsewhere(r store.Run) string {
	if m.cfg.Cluster == nil || r.Status != store.RunRunning || r.Superseded || r.Owner == m.cfg.Owner {
		return ""
	}
	return r.Owner
}

// notify tells the process owner of something done to its run r.
func (m *Service) notify(ctx context.Context, owner string, kind store.NoticeKind, r store.Run, id string) error {
	return m.cfg.Cluster.Notify(ctx, store.Notice{Kind: kind, Owner: owner, RunID: r.ID,
		ConversationID: r.ConversationID, UserID: r.UserID, ID: id})
}

// elicitationElsewhere takes the answer (or cancel) to an elicitation
// whose tool waits in another process: it checks the content against the
// question's schema here (422 on failure), stores the answer, and tells
// the owner, which hands it to the tool. It reports false when no other
// process runs the elicitation's run.
func (m *Service) elicitationElsewhere(ctx context.Context, user string, e store.HumanRequest, ans store.ElicitationAnswer, kind store.NoticeKind) (bool, error) {
	r, err := m.st.GetRun(ctx, user, e.RunID)
	if err != nil {
		return false, nil
	}
	owner := m.elsewhere(r)
	if owner == "" {
		return false, nil
	}
	if err := validAnswer(e, ans); err != nil {
		return true, err
	}
	if _, err := m.st.ResolveHumanRequest(ctx, user, e.ID, ans); err != nil {
		return true, err
	}
	return true, m.notify(ctx, owner, kind, r, e.ID)
}

// validAnswer checks accepted content against the question's schema.
func validAnswer(e store.HumanRequest, ans store.ElicitationAnswer) error {
	if ans.Action != events.ElicitAccept {
		return nil
	}
	var schema *jsonschema.Schema
	if json.Unmarshal(e.Elicitation.Schema, &schema) != nil {
		schema = nil
	}
	return validateContent(e.ID, schema, ans.Content)
}

// decisionOf is the agent's form of an answered approval.
func decisionOf(a store.HumanRequest) nodes.ApprovalDecision {
	d := nodes.ApprovalDecision{ApprovalID: a.ID, Decision: a.Approval.Decision, Args: a.Approval.EditedArgs,
		Reason: a.Approval.Reason, Expired: expiredOf(a)}
	if d.Expired != nil && d.Reason == "" {
		d.Reason = "expired: nobody answered before the deadline"
	}
	return d
}

// responseOf is the tool's form of a resolved elicitation: an expired one
// is a cancel; one its deadline declined carries its
// elicitation.expired.
func responseOf(e store.HumanRequest) operators.ElicitResponse {
	return operators.ElicitResponse{ElicitationID: e.ID, Action: cmp.Or(store.ActionOf(e.Status), events.ElicitCancel), Content: e.Elicitation.Content,
		Expired: elicitationExpiredOf(e)}
}
