package nodes

import (
	"context"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
)

// clarify asks the supervisor's question and waits for the answer. It
// runs twice: first it makes the question the turn's response (stream
// shows and keeps it); then, back from stream, it parks the run with an
// interrupt (reason clarification). The user's next message is the
// resume value: it joins the conversation and the supervisor decides
// again, in the same turn.
func (a *Agent) clarify(ctx context.Context, s ChatState) (graph.Command[ChatState], error) {
	if s.ClarifyQuestion == "" {
		q := s.Decision.Question
		return graph.Command[ChatState]{Update: ChatState{ClarifyQuestion: q, FinalResponse: q, Outcome: OutcomeClarify}}, nil
	}
	answer, err := graph.Interrupt[string](ctx, events.Pending{Kind: events.PendingClarification, Question: s.ClarifyQuestion})
	if err != nil {
		return graph.Command[ChatState]{}, err
	}
	return graph.Command[ChatState]{
		Update: ChatState{
			Messages:    []Message{{Role: RoleUser, Content: answer, Turn: s.Turn}},
			TaskContext: "You asked the user: " + s.ClarifyQuestion + " They answered: " + answer,
			UsageBase:   s.TurnUsage,
		},
		Overwrite: func(st *ChatState) {
			st.ClarifyQuestion, st.FinalResponse, st.Outcome, st.Citations = "", "", "", nil
		},
	}, nil
}
