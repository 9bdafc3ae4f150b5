package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// ErrOtherRun: the answers of one request are to human requests of
// different runs.
var ErrOtherRun = errors.New("runs: the answers are to human requests of different runs")

// Answer is the answer to one pending human request.
type Answer struct {
	// Approval answers an approval, Elicitation an elicitation, Call
	// an uncertain call.
	Approval    ApprovalAnswer
	Elicitation ElicitationAnswer
	Call        CallAnswer
	// Cancel: the user cancels the run instead of answering.
	Cancel bool
}

// AnswerRequest answers pending human requests of one run of a
// conversation: the clients' resume of an interrupted run.
type AnswerRequest struct {
	User, ConversationID string
	// IDs names the approvals, elicitations and uncertain calls
	// answered, in order.
	IDs []string
	// Decide turns each request IDs names into its answer, once every
	// one is found pending (a surface's answer depends on the kind it
	// finds); an error refuses them all, before anything is answered.
	Decide func(i int, hr HumanRequest) (Answer, error)
}

// Answered is what Answer answered, and the run to follow.
type Answered struct {
	// Requests are the human requests answered, as they were pending,
	// in the order of AnswerRequest.IDs.
	Requests []HumanRequest
	// Follow follows the run the answers resume from the event before
	// them (Replay set): pass it to Follow and close Follow.Sub.
	Follow FollowRequest
}

// Answer answers the pending human requests a client resumes a run with,
// and returns the run to follow from before the answers, so that the
// client sees everything they caused. Every request is checked first: of
// the user, of the conversation, pending, of one run; then answered in
// order (AnswerApproval, AnswerElicitation, AnswerUncertainCall), or the
// run cancelled when
// an answer says so. Errors: ErrNotFound, ErrAlreadyResolved,
// ErrOtherRun, Decide's, and those of the verbs it calls.
func (m *Service) Answer(ctx context.Context, req AnswerRequest) (Answered, error) {
	var (
		out     Answered
		answers []Answer
		cancel  bool
	)
	for i, id := range req.IDs {
		hr, err := m.pendingRequest(ctx, req.User, id)
		if err == nil && hr.ConversationID != req.ConversationID {
			err = store.ErrNotFound
		}
		if err == nil && hr.Status != store.HumanPending {
			err = store.ErrAlreadyResolved
		}
		if err == nil && i > 0 && hr.RunID != out.Requests[0].RunID {
			err = ErrOtherRun
		}
		var a Answer
		if err == nil {
			a, err = req.Decide(i, hr)
		}
		if err != nil {
			return Answered{}, fmt.Errorf("runs: answer %d, %s: %w", i, id, err)
		}
		out.Requests = append(out.Requests, hr)
		answers = append(answers, a)
		cancel = cancel || a.Cancel
	}
	if len(out.Requests) == 0 {
		return Answered{}, fmt.Errorf("runs: answer: %w: nothing is answered", store.ErrInvalid)
	}
	first := out.Requests[0]
	// Subscribed, and the run's last event read, before anything is
	// answered: the resumed run's events all come after it.
	sub := m.Subscribe(first.RunID, false)
	run, err := m.st.GetRun(ctx, req.User, first.RunID)
	if err == nil && cancel {
		_, err = m.Cancel(ctx, req.User, first.ConversationID)
	}
	for i, hr := range out.Requests {
		if cancel || err != nil {
			break
		}
		switch hr.Kind {
		case events.PendingApproval:
			_, err = m.AnswerApproval(ctx, req.User, hr.ID, answers[i].Approval)
		case events.PendingUncertainCall:
			_, err = m.AnswerUncertainCall(ctx, req.User, hr.ID, answers[i].Call)
		default:
			err = m.AnswerElicitation(ctx, req.User, hr.ID, answers[i].Elicitation)
		}
	}
	if err != nil {
		sub.Close()
		return Answered{}, err
	}
	out.Follow = FollowRequest{User: req.User, ConversationID: first.ConversationID, RunID: first.RunID, Sub: sub,
		After: run.LastSeq, Replay: true}
	return out, nil
}

// answerable are the kinds of human request Answer answers; a
// clarification is answered by the next message instead.
var answerable = [...]events.PendingKind{events.PendingApproval, events.PendingElicitation, events.PendingUncertainCall}

// pendingRequest finds the user's request id among the kinds Answer
// answers. Errors: store.ErrNotFound, the store's.
func (m *Service) pendingRequest(ctx context.Context, user, id string) (HumanRequest, error) {
	for _, kind := range answerable {
		hr, err := m.st.GetHumanRequest(ctx, kind, user, id)
		if !errors.Is(err, store.ErrNotFound) {
			return hr, err
		}
	}
	return HumanRequest{}, store.ErrNotFound
}
