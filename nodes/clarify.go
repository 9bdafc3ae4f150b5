package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
)

// clarify asks the supervisor's question and waits for the answer. It
// runs twice: first it makes the question the turn's response (stream
// shows and keeps it); then, back from stream, it parks the run with an
// interrupt (reason clarification). The user's next message is the
// resume value: it joins the conversation and the supervisor decides
// again, in the same turn. A question nobody answered before its
// deadline resumes unanswered (see ClarificationExpired): the
// supervisor decides again, told to go on without an answer.
func (a *Agent) clarify(ctx context.Context, s ChatState) (graph.Command[ChatState], error) {
	if s.ClarifyQuestion == "" {
		q := s.Decision.Question
		return graph.Command[ChatState]{Update: ChatState{ClarifyQuestion: q, FinalResponse: q, Outcome: OutcomeClarify}}, nil
	}
	raw, err := graph.Interrupt[json.RawMessage](ctx, events.Pending{Kind: events.PendingClarification, Question: s.ClarifyQuestion})
	if err != nil {
		return graph.Command[ChatState]{}, err
	}
	overwrite := func(st *ChatState) { st.ClarifyQuestion, st.FinalResponse, st.Outcome, st.Citations = "", "", "", nil }
	var answer string
	if err := json.Unmarshal(raw, &answer); err != nil {
		var u unanswered
		if err := json.Unmarshal(raw, &u); err != nil || !u.Unanswered {
			return graph.Command[ChatState]{}, fmt.Errorf("nodes: clarify: %w: resume value %s is neither an answer nor unanswered", ErrInvalidInput, raw)
		}
		// Nobody answered before the question's deadline: no message
		// joins the conversation, and the agent is told to go on
		// without one, and to say so.
		return graph.Command[ChatState]{
			Update: ChatState{
				TaskContext: "You asked the user: " + s.ClarifyQuestion + " They did not answer in time. Do not ask again: " +
					"go on with your best judgement, and say plainly in your answer that the user did not answer and what you assumed.",
				UsageBase: s.TurnUsage,
			},
			Overwrite: overwrite,
		}, nil
	}
	return graph.Command[ChatState]{
		Update: ChatState{
			Messages:    []Message{{Role: RoleUser, Content: answer, Turn: s.Turn}},
			TaskContext: "You asked the user: " + s.ClarifyQuestion + " They answered: " + answer,
			UsageBase:   s.TurnUsage,
		},
		Overwrite: overwrite,
	}, nil
}

// unanswered is the resume value of a clarifying question whose deadline
// decided that the agent goes on without an answer; an answer is the
// message, a JSON string.
type unanswered struct {
	Unanswered bool `json:"unanswered"`
}

// ClarificationExpired goes on with the turn parked on the clarifying
// question id, which nobody answered before its deadline: it yields
// expired (clarification.expired) first, then the run's events, with
// the contract of Run; the agent proceeds without an answer. Errors:
// ErrNoPendingElicitation when no such question waits.
func (a *Agent) ClarificationExpired(ctx context.Context, conversationID, id string, expired events.Payload) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		pending, err := a.waiting(ctx, conversationID)
		if err != nil {
			failOrCancel(ctx, yield, err)
			return
		}
		if !slices.ContainsFunc(pending, func(p events.Pending) bool { return p.Kind == events.PendingClarification && p.ID == id }) {
			fail(yield, fmt.Errorf("nodes: clarification expired in conversation %s: %w (id %q)", conversationID, ErrNoPendingElicitation, id))
			return
		}
		if expired != nil && !yield(events.New(expired), nil) {
			return
		}
		a.runGraph(ctx, yield, nil, graph.RunConfig{ThreadID: conversationID, ResumeByID: map[string]any{id: unanswered{Unanswered: true}}})
	}
}
