package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/mcp/elicit"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// The agent's hooks into the service: its answers are stored as the
// run's assistant messages, and its tools' questions wait for the user
// here.

// elicitor is the agent's nodes.Elicitor: a tool's question, recorded in
// the store, waits in the elicitation manager while an SSE stream follows
// the run, for ElicitTimeout at most, until POST /elicitation/respond
// answers it or DELETE /elicitation/{id} cancels it. When nobody watches
// (or nobody answered in time) it fails with operators.ErrAskLater: the
// run parks on the question, which stays pending in the store, and an
// answer resumes it later (see elicitationAnswered). The agent emits
// elicitation.request before and elicitation.response after; the event
// pipeline stores the request before sending its event.
type elicitor struct{ m *runManager }

var _ nodes.Elicitor = elicitor{}

// errUnwatched: no SSE stream follows the run any more.
var errUnwatched = errors.New("api: no stream follows the run")

func (e elicitor) Elicit(ctx context.Context, conversationID string, req operators.ElicitRequest) (operators.ElicitResponse, error) {
	m := e.m
	rn := runFrom(ctx)
	if rn == nil {
		rn = m.live(conversationID)
	}
	if rn == nil {
		return operators.ElicitResponse{Action: operators.ElicitDecline},
			fmt.Errorf("api: elicitation on conversation %s: %w: no run of it is live here", conversationID, operators.ErrNoUser)
	}
	id := req.ElicitationID
	bg := context.WithoutCancel(ctx)
	schema := json.RawMessage("{}")
	if req.Schema != nil {
		if b, err := json.Marshal(req.Schema); err == nil {
			schema = b
		}
	}
	if _, err := m.st.CreateElicitation(bg, store.NewElicitation{ID: id, RunID: rn.id, Source: store.ToValidText(req.Source),
		Message: store.ToValidText(req.Message), Schema: schema}); errors.Is(err, store.ErrConflict) {
		// Asked again (the call issued again, or the run continued after
		// a crash): an answer stored meanwhile is the answer.
		if st, gerr := m.st.GetElicitation(bg, rn.userID, id); gerr == nil && st.Status != store.ElicitationPending {
			if st.Status == store.ElicitationExpired {
				return operators.ElicitResponse{ElicitationID: id, Action: operators.ElicitCancel}, nil
			}
			return operators.ElicitResponse{ElicitationID: id, Action: actionOf(st.Status), Content: st.Content}, nil
		}
	} else if err != nil {
		return operators.ElicitResponse{Action: operators.ElicitCancel}, fmt.Errorf("api: store elicitation %s: %w", id, err)
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
	var reason elicit.Reason
	resp, err := m.elicit.Ask(wait, elicit.Request{ElicitRequest: req, ConversationID: rn.conversationID, UserID: rn.userID,
		Timeout: m.cfg.ElicitTimeout}, elicit.Hooks{
		Requested: func(context.Context, elicit.Pending) error {
			m.markReady(id)
			// An answer that reached the store before the question was
			// registered here (through another process, or while this
			// run was on its way to asking again) is the answer.
			if st, err := m.st.GetElicitation(bg, rn.userID, id); err == nil && answered(st) {
				_ = m.elicit.Respond(rn.userID, operators.ElicitResponse{ElicitationID: id, Action: actionOf(st.Status), Content: st.Content})
			}
			return nil
		},
		Resolved: func(_ context.Context, r elicit.Resolution) { reason = r.Reason },
	})
	if reason == elicit.ReasonTimeout || err != nil && errors.Is(context.Cause(wait), errUnwatched) && ctx.Err() == nil {
		// Nobody answered while the run could wait: it parks, and the
		// question stays pending in the store.
		return resp, fmt.Errorf("api: elicitation %s: %w", id, operators.ErrAskLater)
	}
	if err != nil {
		return resp, err // the run is ending (cancelled, shutting down): nothing to record
	}
	// Record the outcome before the tool goes on, so the record is final
	// before the run can end. The answer's HTTP handler records it too;
	// whichever comes second finds it resolved.
	ans := store.ElicitationAnswer{Action: store.ElicitationAction(resp.Action), Content: resp.Content}
	if resp.Action != operators.ElicitAccept {
		ans.Content = nil
	}
	if _, rerr := m.st.ResolveElicitation(bg, rn.userID, id, ans); rerr != nil && !errors.Is(rerr, store.ErrAlreadyResolved) {
		rn.log.LogAttrs(bg, slog.LevelError, "recording an elicitation's outcome failed", slog.String("elicitation_id", id), slog.Any("error", rerr))
	}
	return resp, nil
}

// onAnswer is the agent's OnAnswer hook: it stores the assistant's
// message in the run's record. A recovered run may say its answer twice
// (the node ran again after the crash); the second is dropped.
func (m *runManager) onAnswer(ctx context.Context, a nodes.Answer) error {
	rn := runFrom(ctx)
	if rn == nil {
		rn = m.live(a.ConversationID)
	}
	if rn == nil {
		return fmt.Errorf("api: answer for conversation %s: no live run", a.ConversationID)
	}
	ctx = context.WithoutCancel(ctx)
	if rn.recovered {
		msgs, err := m.st.ListMessages(ctx, rn.userID, rn.conversationID)
		if err != nil {
			return fmt.Errorf("api: answer of run %s: %w", rn.id, err)
		}
		for _, msg := range msgs {
			if msg.RunID == rn.id && msg.Role == store.RoleAssistant {
				return nil
			}
		}
	}
	// The model may have echoed bytes a tool read: keep them repaired
	// rather than fail the run.
	nm := store.NewMessage{RunID: rn.id, Role: store.RoleAssistant, Content: store.ToValidText(a.Message.Content)}
	if len(a.Citations) > 0 {
		nm.Citations, _ = json.Marshal(a.Citations)
	}
	nm.Meta, _ = json.Marshal(map[string]string{"outcome": string(a.Outcome), "request_id": a.RequestID})
	if _, err := m.st.AddMessage(ctx, nm); err != nil {
		return fmt.Errorf("api: store the answer of run %s: %w", rn.id, err)
	}
	return nil
}

// readyFor returns the flag of an elicitation id, made on first use.
func (m *runManager) readyFor(id string) *readyFlag {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.ready[id]
	if f == nil {
		f = &readyFlag{ch: make(chan struct{})}
		m.ready[id] = f
	}
	return f
}

func (m *runManager) markReady(id string) {
	f := m.readyFor(id)
	m.mu.Lock()
	if !f.closed {
		f.closed = true
		close(f.ch)
	}
	m.mu.Unlock()
}

func (m *runManager) forgetReady(id string, f *readyFlag) {
	m.mu.Lock()
	if m.ready[id] == f {
		delete(m.ready, id)
	}
	m.mu.Unlock()
}

// awaitElicitation waits, briefly, until the elicitation id is
// registered with the manager when its run is live here: the event
// announcing it may reach a client just before the tool's request does.
func (m *runManager) awaitElicitation(ctx context.Context, e store.Elicitation) {
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
