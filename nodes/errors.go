package nodes

import (
	"errors"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/llm"
)

// Sentinel errors callers branch on; match them with errors.Is.
var (
	// ErrInvalidInput: the input or resume value cannot be used (empty
	// message, unknown decision, edit without an args object).
	ErrInvalidInput = errors.New("nodes: invalid input")
	// ErrNoPendingApproval: Resume found no approval waiting in the
	// conversation, or none with the given id.
	ErrNoPendingApproval = errors.New("nodes: no pending approval")
	// ErrNoPendingElicitation: AnswerElicitation found no tool's question
	// with that id waiting in the conversation (nor AnswerUncertainCall
	// such a call, nor ClarificationExpired such a clarifying question).
	ErrNoPendingElicitation = errors.New("nodes: no pending elicitation")
	// ErrApprovalPending: a new message came while a tool call waits for
	// a human — its approval, or the answer to its question; answer that
	// first.
	ErrApprovalPending = errors.New("nodes: an approval is pending")
	// ErrUnknownTurn: Edit found no turn with that request id.
	ErrUnknownTurn = errors.New("nodes: unknown turn")
	// ErrNoConversation: the conversation has no state.
	ErrNoConversation = errors.New("nodes: unknown conversation")
)

// errorCode maps an error to run.failed's code.
func errorCode(err error) string {
	switch {
	case errors.Is(err, ErrInvalidInput):
		return events.CodeInvalidInput
	case errors.Is(err, ErrApprovalPending):
		return events.CodeApprovalPending
	case errors.Is(err, ErrNoPendingApproval), errors.Is(err, ErrNoPendingElicitation), errors.Is(err, graph.ErrUnknownInterrupt):
		return events.CodeNoPending
	case errors.Is(err, ErrUnknownTurn), errors.Is(err, ErrNoConversation):
		return events.CodeUnknownTurn
	case errors.Is(err, llm.ErrUnknownModel):
		return events.CodeModelUnknown
	case errors.Is(err, graph.ErrRecursionLimit):
		return events.CodeRecursion
	}
	var le *llm.Error
	if errors.As(err, &le) {
		return events.CodeModel
	}
	return events.CodeInternal
}
