package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/store"
)

// callLog is the agent's nodes.CallLog: the calls of tools that are
// neither read-only nor idempotent, recorded in the store's tool calls
// under the live run that makes them (see store.ToolCalls for why there).
type callLog struct{ m *Service }

var _ nodes.CallLog = callLog{}

// errNoLiveRun: a call was recorded outside a run live here.
var errNoLiveRun = errors.New("runs: no run of the call is live here")

func (l callLog) Begin(ctx context.Context, key, tool, again string) (nodes.CallRecord, error) {
	rn := runFrom(ctx)
	if rn == nil {
		return nodes.CallRecord{}, errNoLiveRun
	}
	prior, err := l.m.st.BeginToolCall(context.WithoutCancel(ctx), store.NewToolCall{Key: key, RunID: rn.id, Tool: tool, Again: again})
	if err != nil {
		return nodes.CallRecord{}, fmt.Errorf("runs: record the start of %s: %w", tool, err)
	}
	return nodes.CallRecord{Started: prior.State == store.CallStarted, Outcome: prior.Outcome, Again: prior.Again}, nil
}

func (l callLog) Asking(ctx context.Context, key string) error {
	return l.m.st.SetToolCall(context.WithoutCancel(ctx), key, store.CallAsking, nil)
}

func (l callLog) End(ctx context.Context, key string, outcome json.RawMessage) error {
	return l.m.st.SetToolCall(context.WithoutCancel(ctx), key, store.CallEnded, outcome)
}

// AnswerUncertainCall records a person's decision on a call a recovered
// run found started and not ended, and resumes the run parked on it
// (parked here, or in a process that is gone: any process may resume
// it). Of concurrent answers the first stored wins. Errors:
// store.ErrNotFound, store.ErrAlreadyResolved, ErrInvalid (a decision
// that is not one), ErrShuttingDown.
func (m *Service) AnswerUncertainCall(ctx context.Context, user, id string, ans store.CallAnswer) (store.HumanRequest, error) {
	if err := ans.Validate(); err != nil {
		return store.HumanRequest{}, err
	}
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	h, err := m.pending(ctx, events.PendingUncertainCall, user, id)
	if err != nil {
		return store.HumanRequest{}, err
	}
	if err := parked(ctx, m.parking(h)); err != nil {
		return store.HumanRequest{}, err
	}
	if h, err = m.st.ResolveHumanRequest(ctx, user, id, ans); err != nil {
		return store.HumanRequest{}, err
	}
	if err := m.resumeWith(ctx, h); err != nil && !errors.Is(err, store.ErrConflict) {
		return h, err
	}
	return h, nil
}

// uncertainCallAnswered is resumeWith's agent call for an uncertain
// call's stored decision. Its events begin with uncertain_call.resolved
// (after uncertain_call.expired when the deadline decided), as an
// approval's begin with approval.resolved, once the agent has
// taken the decision up: an agent that finds nothing parked on the call
// fails without it.
func (m *Service) uncertainCallAnswered(ctx context.Context, conversationID string, h store.HumanRequest) iter.Seq2[events.Event, error] {
	decision := store.DecisionOf(h.Status)
	seq := m.agent.AnswerUncertainCall(ctx, conversationID, h.ID, decision, h.TimedOut)
	return func(yield func(events.Event, error) bool) {
		told := false
		for ev, err := range seq {
			if !told && err == nil {
				told = true
				if x := expiredEvent(h); x != nil && !yield(events.New(x), nil) {
					return
				}
				resolved := &events.UncertainCallResolved{UncertainCallID: h.ID, ToolCallID: h.UncertainCall.ToolCallID, Decision: string(decision)}
				if !yield(events.New(resolved), nil) {
					return
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// askUncertainCall records the human request tool.uncertain announces,
// before the event is stored, so a client that reads it finds the
// request pending, with its deadline, which is scheduled. A run parking
// on it again (recovered once more) finds it recorded, and schedules
// its deadline again.
func (m *Service) askUncertainCall(ctx context.Context, rn *Run, d *events.ToolUncertain) {
	at, onExpiry := m.deadlineOf(m.cfg.UncertainCallExpiry)
	h, err := m.st.CreateHumanRequest(ctx, store.NewHumanRequest{ID: d.UncertainCallID, Kind: events.PendingUncertainCall, RunID: rn.id,
		UncertainCall: store.UncertainCall{ToolCallID: d.ToolCallID, Tool: d.Tool, Args: d.Args}, ExpiresAt: at, OnExpiry: onExpiry})
	if errors.Is(err, store.ErrConflict) {
		h, err = m.st.GetHumanRequest(ctx, events.PendingUncertainCall, rn.userID, d.UncertainCallID)
	}
	if err != nil {
		rn.log.LogAttrs(ctx, slog.LevelError, "storing an uncertain call failed", slog.String("uncertain_call_id", d.UncertainCallID),
			slog.Any("error", err))
		return
	}
	d.ExpiresAt, d.OnExpiry = h.ExpiresAt, h.OnExpiry
	m.schedule(ctx, rn, h)
}
