package nodes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/operators"
)

// A tool's question (an MCP elicitation, an operator's confirm or choose)
// is a durable interrupt, as an approval is. While the run can wait for
// it, the tool waits inside execute_tool for the Elicitor's answer. When
// it cannot (the Elicitor fails with operators.ErrAskLater: nobody
// answered while a client watched), the call ends, its result unused, and
// execute_tool raises an interrupt carrying the question and the results
// of the calls that had finished; the run parks. AnswerElicitation
// resumes it: execute_tool then skips the finished calls and issues the
// questioning call again, its question answered at once — or, for a
// question that cannot take a late answer, tells the model the call
// expired.

// ElicitationAnswer answers a tool's question a parked run waits for.
type ElicitationAnswer struct {
	ElicitationID string              `json:"elicitation_id"`
	Action        events.ElicitAction `json:"action"`
	// Content is the accepted object.
	Content json.RawMessage `json:"content,omitempty"`
	// Expired, when set, says that nobody answered before the
	// question's deadline, which decided Action: elicitation.expired
	// comes before elicitation.response.
	Expired *events.ElicitationExpired `json:"expired,omitempty"`
}

// parkedQuestion is the interrupt payload of a question that parked the
// run: the Pending the API sees, and what execute_tool needs back.
type parkedQuestion struct {
	events.Pending
	Done []doneCall `json:"done,omitempty"`
	// CallKey is the idempotency key of an uncertain call (its
	// UncertainCallID may be another, see uncertainID).
	CallKey string `json:"call_key,omitempty"`
}

// parkedOn finds, among a conversation's interrupts, the question of the
// kind (an elicitation or an uncertain call) with that id.
func parkedOn(ins []graph.PendingInterrupt, kind events.PendingKind, id string) (graph.PendingInterrupt, parkedQuestion, bool) {
	for _, in := range ins {
		var q parkedQuestion
		if json.Unmarshal(in.Payload, &q) != nil || q.Kind != kind {
			continue
		}
		if kind == events.PendingElicitation && q.ElicitationID == id || kind == events.PendingUncertainCall && q.UncertainCallID == id {
			return in, q, true
		}
	}
	return graph.PendingInterrupt{}, parkedQuestion{}, false
}

// doneCall is a call of an execution that finished before a question
// parked it.
type doneCall struct {
	Step   int                   `json:"step"`
	Result ToolResult            `json:"result"`
	Chunks []operators.DataChunk `json:"chunks,omitempty"`
	Direct []DirectResponse      `json:"direct,omitempty"`
}

// questionAnswered is the resume value of a parked question: the answer
// (to a tool's question, or a person's decision on a call that may have
// run), and the parked question's payload, which AnswerElicitation and
// AnswerUncertainCall read back from the thread.
type questionAnswered struct {
	ElicitationAnswer
	Decision events.CallDecision `json:"decision,omitempty"`
	// TimedOut: the deadline of the uncertain call, not a person, made
	// Decision.
	TimedOut bool           `json:"timed_out,omitempty"`
	Question parkedQuestion `json:"question"`
}

// AnswerElicitation answers the question of a tool a parked run waits
// for and continues the run; it yields elicitation.response first, then
// the run's events, with the contract of Run. Errors: ErrInvalidInput for
// an unknown action, ErrNoPendingElicitation when no question with that
// id waits.
func (a *Agent) AnswerElicitation(ctx context.Context, conversationID string, ans ElicitationAnswer) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		switch ans.Action {
		case events.ElicitAccept, events.ElicitDecline, events.ElicitCancel:
		default:
			fail(yield, fmt.Errorf("nodes: answer elicitation: %w: action %q is not accept, decline or cancel", ErrInvalidInput, ans.Action))
			return
		}
		ins, err := a.interrupts(ctx, conversationID)
		if err != nil {
			failOrCancel(ctx, yield, err)
			return
		}
		if in, q, ok := parkedOn(ins, events.PendingElicitation, ans.ElicitationID); ok {
			if ans.Action != events.ElicitAccept {
				ans.Content = nil
			}
			if x := ans.Expired; x != nil && !yield(events.New(x), nil) {
				return
			}
			if !yield(events.New(&events.ElicitationResponse{ElicitationID: ans.ElicitationID, Action: string(ans.Action)}), nil) {
				return
			}
			a.runGraph(ctx, yield, nil, graph.RunConfig{ThreadID: conversationID,
				ResumeByID: map[string]any{in.ID: questionAnswered{ElicitationAnswer: ans, Question: q}}})
			return
		}
		fail(yield, fmt.Errorf("nodes: answer elicitation in conversation %s: %w (id %q)", conversationID, ErrNoPendingElicitation, ans.ElicitationID))
	}
}

// elicitationID names the n-th question (from 0) of a tool call in one
// turn: the same question asked again — by the call issued again after a
// parked question was answered, or by a run continued after a crash — has
// the same id, so its stored answer finds it.
func elicitationID(conversationID, requestID, toolCallID string, n int) string {
	return derivedID("elicit_", conversationID, requestID, toolCallID, strconv.Itoa(n))
}

// derivedID is the one way the agent names what must keep its name when
// a call is issued again (after a question, a crash, a person's "run it
// again"): prefix and a hash of parts, so equal parts give the same id
// and different ones, in practice, never do.
func derivedID(prefix string, parts ...string) string {
	h := sha256.New()
	for _, part := range parts {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return prefix + hex.EncodeToString(h.Sum(nil)[:16])
}

// answeredQuestions takes the answers to the questions this execution
// parked on before, in the order they were asked: each is the answer to
// the interrupt the execution raised next. It returns the answers to
// tools' questions by elicitation id, the decisions on calls that may
// have run by the calls' idempotency keys, and the parked questions'
// payloads, the last of which lists every call done so far.
func answeredQuestions(ctx context.Context) (map[string]questionAnswered, map[string]decidedCall, *parkedQuestion, error) {
	var (
		answers map[string]questionAnswered
		decided map[string]decidedCall
		last    *parkedQuestion
	)
	for graph.Resumed(ctx) {
		qa, err := graph.Interrupt[questionAnswered](ctx, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		last = &qa.Question
		if qa.Question.Kind == events.PendingUncertainCall {
			if decided == nil {
				decided = map[string]decidedCall{}
			}
			decided[qa.Question.CallKey] = decidedCall{ID: qa.Question.UncertainCallID, Decision: qa.Decision, TimedOut: qa.TimedOut}
			continue
		}
		if answers == nil {
			answers = map[string]questionAnswered{}
		}
		answers[qa.ElicitationID] = qa
	}
	return answers, decided, last, nil
}
