package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
)

// The agent's hooks into the service: its answers are stored as the
// run's assistant messages, and its tools' questions wait for the user
// here.

// elicitor is the agent's nodes.Elicitor: a tool's question, recorded in
// the store, waits in the waiting room (questions) while an interactive subscriber follows
// the run, for ElicitTimeout at most, until POST /elicitation/respond
// answers it or DELETE /elicitation/{id} cancels it. When nobody watches
// (or nobody answered in time) it fails with operators.ErrAskLater: the
// run parks on the question, which stays pending in the store, and an
// answer resumes it later (see elicitationAnswered). The agent emits
// elicitation.request before and elicitation.response after; the event
// pipeline stores the request before sending its event.
type elicitor struct{ m *Service }

var _ nodes.Elicitor = elicitor{}

// errUnwatched: no interactive subscriber follows the run any more.
var errUnwatched = errors.New("runs: no stream follows the run")

func (e elicitor) Elicit(ctx context.Context, conversationID string, req operators.ElicitRequest) (operators.ElicitResponse, error) {
	m := e.m
	rn := runFrom(ctx)
	if rn == nil {
		rn = m.live(conversationID)
	}
	if rn == nil {
		return operators.ElicitResponse{Action: events.ElicitDecline},
			fmt.Errorf("runs: elicitation on conversation %s: %w: no run of it is live here", conversationID, operators.ErrNoUser)
	}
	id := req.ElicitationID
	bg := context.WithoutCancel(ctx)
	schema := json.RawMessage("{}")
	if req.Schema != nil {
		if b, err := json.Marshal(req.Schema); err == nil {
			schema = b
		}
	}
	if st, err := m.createElicitation(bg, rn, id, req.Source, req.Message, schema); err == nil && st.Status != store.HumanPending {
		// Asked again (the call issued again, or the run continued after
		// a crash): an answer stored meanwhile is the answer.
		return responseOf(st), nil
	} else if err != nil {
		return operators.ElicitResponse{Action: events.ElicitCancel}, fmt.Errorf("runs: store elicitation %s: %w", id, err)
	}
	flag := m.readyFor(id)
	defer m.forgetReady(id, flag)
	wait, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() { // ends with the wait
		select {
		case <-rn.hub.idle():
			stop(errUnwatched)
		case <-wait.Done():
		}
	}()
	var outcome reason
	resp, err := m.asks.ask(wait, question{ElicitRequest: req, ConversationID: rn.conversationID, UserID: rn.userID},
		questionHooks{
			Requested: func(context.Context, asked) error {
				m.markReady(id)
				// An answer that reached the store before the question was
				// registered here (through another process, or while this
				// run was on its way to asking again) is the answer.
				if st, err := m.st.GetHumanRequest(bg, events.PendingElicitation, rn.userID, id); err == nil && st.Status.Answered() {
					_ = m.asks.respond(rn.userID, responseOf(st))
				}
				return nil
			},
			Resolved: func(_ context.Context, r resolution) { outcome = r.Reason },
		})
	if outcome == reasonTimeout || err != nil && errors.Is(context.Cause(wait), errUnwatched) && ctx.Err() == nil {
		// Nobody answered while the run could wait: it parks, and the
		// question stays pending in the store.
		return resp, fmt.Errorf("runs: elicitation %s: %w", id, operators.ErrAskLater)
	}
	if err != nil {
		return resp, err // the run is ending (cancelled, shutting down): nothing to record
	}
	// Record the outcome before the tool goes on, so the record is final
	// before the run can end. AnswerElicitation records it too;
	// whichever comes second finds it resolved.
	var ans store.HumanAnswer = store.ElicitationAnswer{Action: resp.Action, Content: resp.Content}
	switch {
	case resp.Expired != nil: // the deadline's outcome, not the user's
		ans = store.DeadlineAnswer{Of: events.PendingElicitation, Outcome: resp.Expired.Outcome}
	case resp.Action != events.ElicitAccept:
		ans = store.ElicitationAnswer{Action: resp.Action}
	}
	if _, rerr := m.st.ResolveHumanRequest(bg, rn.userID, id, ans); rerr != nil && !errors.Is(rerr, store.ErrAlreadyResolved) {
		rn.log.LogAttrs(bg, slog.LevelError, "recording an elicitation's outcome failed", slog.String("elicitation_id", id), slog.Any("error", rerr))
	}
	return resp, nil
}

// createElicitation records a tool's question, with the deadline its
// source's rules give it, and schedules the deadline; asked again (the
// event and the tool both record it, a recovered run asks again) it
// returns the record as it stands, its deadline scheduled again, as
// schedule allows.
func (m *Service) createElicitation(ctx context.Context, rn *Run, id, source, message string, schema json.RawMessage) (store.HumanRequest, error) {
	at, onExpiry := m.questionDeadline(source)
	e, err := m.st.CreateHumanRequest(ctx, store.NewHumanRequest{ID: id, Kind: events.PendingElicitation, RunID: rn.id,
		Elicitation: store.Elicitation{Source: store.ToValidText(source), Message: store.ToValidText(message), Schema: schema},
		ExpiresAt:   at, OnExpiry: onExpiry})
	if errors.Is(err, store.ErrConflict) {
		e, err = m.st.GetHumanRequest(ctx, events.PendingElicitation, rn.userID, id)
	}
	if err != nil {
		return e, err
	}
	m.schedule(ctx, rn, e)
	return e, nil
}

// onAnswer is the agent's OnAnswer hook: it keeps the assistant's
// message for the response.done that follows, to be stored with it in
// one transaction (see emitAs): whoever reads the event finds the
// message, and a run that dies before they are stored says them again
// when it is continued (nodes.Agent.Continue). A recovered run may say
// its answer twice (the node ran again after the crash, or the graph
// had ended); the second is dropped, and its response.done with it.
// Only the run's last answer can be said again (stream, which says it,
// starts from a barrier's checkpoint, so it says the same words), and a
// run may answer twice in its own right: a clarifying question whose
// deadline let the run go on, then the answer it went on to.
func (m *Service) onAnswer(ctx context.Context, a nodes.Answer) error {
	rn := runFrom(ctx)
	if rn == nil {
		rn = m.live(a.ConversationID)
	}
	if rn == nil {
		return fmt.Errorf("runs: answer for conversation %s: no live run", a.ConversationID)
	}
	if a.Message.Turn == 1 && a.Outcome != nodes.OutcomeClientTools {
		rn.firstAnswer.Store(true)
	}
	ctx = context.WithoutCancel(ctx)
	// The model may have echoed bytes a tool read: keep them repaired
	// rather than fail the run.
	nm := store.NewMessage{RunID: rn.id, Role: store.RoleAssistant, Content: store.ToValidText(a.Message.Content)}
	if rn.recovered {
		msgs, err := m.st.RunMessages(ctx, rn.userID, rn.id)
		if err != nil {
			return fmt.Errorf("runs: answer of run %s: %w", rn.id, err)
		}
		for _, msg := range slices.Backward(msgs) {
			if msg.Role == store.RoleAssistant {
				if msg.Content == nm.Content {
					rn.said.Store(true)
					return nil
				}
				break
			}
		}
	}
	if len(a.Citations) > 0 {
		nm.Citations, _ = json.Marshal(a.Citations)
	}
	meta := store.AnswerMeta{Outcome: string(a.Outcome), RequestID: a.RequestID, NoMemory: a.NoMemory}
	for _, r := range a.ToolResults {
		meta.Tools = append(meta.Tools, store.AnswerTool{Tool: r.Tool, Status: string(r.Status)})
	}
	nm.Meta, _ = json.Marshal(meta)
	rn.answer.Store(&nm)
	return nil
}

// readyFor returns the flag of an elicitation id, made on first use.
func (m *Service) readyFor(id string) *readyFlag {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.ready[id]
	if f == nil {
		f = &readyFlag{ch: make(chan struct{})}
		m.ready[id] = f
	}
	return f
}

func (m *Service) markReady(id string) {
	f := m.readyFor(id)
	m.mu.Lock()
	if !f.closed {
		f.closed = true
		close(f.ch)
	}
	m.mu.Unlock()
}

func (m *Service) forgetReady(id string, f *readyFlag) {
	m.mu.Lock()
	if m.ready[id] == f {
		delete(m.ready, id)
	}
	m.mu.Unlock()
}

// awaitElicitation waits, briefly, until the elicitation id is
// registered in the waiting room when its run is live here: the event
// announcing it may reach a client just before the tool's request does.
func (m *Service) awaitElicitation(ctx context.Context, e store.HumanRequest) {
	rn := m.live(e.ConversationID)
	if rn == nil || rn.id != e.RunID {
		return
	}
	f := m.readyFor(e.ID)
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-f.ch:
	case <-t.C:
		m.forgetReady(e.ID, f)
	case <-ctx.Done():
	case <-rn.done:
		m.forgetReady(e.ID, f)
	}
}

// AnswerElicitation takes the user's answer to a tool's question: the
// tool waiting for it here gets it at once; one waiting in another
// process is told (see Cluster); a run parked on it resumes with it; a
// run on its way to asking it again finds it stored. The content is
// checked against the question's schema first. Of concurrent answers the
// first stored wins. Errors: store.ErrNotFound, store.ErrAlreadyResolved
// (answered, cancelled or expired), *ValidationError (the content does
// not fit the schema), ErrInvalid (an action that is not one).
func (m *Service) AnswerElicitation(ctx context.Context, user, id string, ans store.ElicitationAnswer) error {
	return m.settleElicitation(ctx, user, id, ans, store.NoticeElicitation, "answer", func(e store.HumanRequest) error {
		return m.asks.respond(user, operators.ElicitResponse{ElicitationID: e.ID, Action: ans.Action, Content: ans.Content})
	})
}

// CancelElicitation cancels a tool's question for the user: the tool sees
// a cancel, wherever it waits, as for AnswerElicitation. Errors:
// store.ErrNotFound, store.ErrAlreadyResolved.
func (m *Service) CancelElicitation(ctx context.Context, user, id string) error {
	cancel := store.ElicitationAnswer{Action: events.ElicitCancel}
	return m.settleElicitation(ctx, user, id, cancel, store.NoticeElicitationCancel, "cancel", func(e store.HumanRequest) error {
		return m.asks.cancel(user, e.ID)
	})
}

// settleElicitation gives ans to the tool waiting here for the user's
// pending elicitation id, by tell, or else, when no tool here waits
// (the store says it is pending), takes it as answerElicitation does
// with a notice of kind; then records ans, logging a failure as one of
// what ("answer", "cancel").
func (m *Service) settleElicitation(ctx context.Context, user, id string, ans store.ElicitationAnswer, kind store.NoticeKind,
	what string, tell func(e store.HumanRequest) error) error {
	e, err := m.pendingElicitation(ctx, user, id)
	if err == nil {
		err = tell(e)
		switch {
		case errors.Is(err, store.ErrAlreadyResolved) && m.asks.answered(e.ID):
			// Another answer (or the deadline) reached the tool here
			// first; the record is about to say so.
		case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrAlreadyResolved):
			err = m.answerElicitation(ctx, user, e, ans, kind)
		}
	}
	if err != nil {
		return err
	}
	// The waiting tool has the answer; the store may have it already too.
	if _, err := m.st.ResolveHumanRequest(ctx, user, e.ID, ans); err != nil && !errors.Is(err, store.ErrAlreadyResolved) {
		m.log.LogAttrs(ctx, slog.LevelError, "recording an elicitation "+what+" failed", slog.String("elicitation_id", e.ID), slog.Any("error", err))
	}
	return nil
}

// answerElicitation takes the answer (or cancel) to an elicitation no tool
// in this process waits for: the tool waits in another process (which is
// told), or its run is parked on it (and resumes with the answer), or its
// run is on its way to asking it again (and finds the answer stored).
// The content is checked against the question's schema first, and of
// concurrent answers the first stored wins (store.ErrAlreadyResolved for
// the others).
func (m *Service) answerElicitation(ctx context.Context, user string, e store.HumanRequest, ans store.ElicitationAnswer, kind store.NoticeKind) error {
	if handled, err := m.elicitationElsewhere(ctx, user, e, ans, kind); handled {
		return err
	}
	if err := validAnswer(e, ans); err != nil {
		return err
	}
	e, err := m.st.ResolveHumanRequest(ctx, user, e.ID, ans)
	if err != nil {
		return err
	}
	return m.elicitationAnswered(ctx, e)
}

// pendingElicitation returns the user's pending elicitation, once the
// tool waiting for it can take an answer.
func (m *Service) pendingElicitation(ctx context.Context, user, id string) (store.HumanRequest, error) {
	e, err := m.pending(ctx, events.PendingElicitation, user, id)
	if err != nil {
		return e, err
	}
	m.awaitElicitation(ctx, e)
	return e, nil
}

// pending returns the user's human request of the kind, with
// store.ErrAlreadyResolved once it is no longer pending.
func (m *Service) pending(ctx context.Context, kind events.PendingKind, user, id string) (store.HumanRequest, error) {
	h, err := m.st.GetHumanRequest(ctx, kind, user, id)
	if err == nil && h.Status != store.HumanPending {
		err = store.ErrAlreadyResolved
	}
	return h, err
}
