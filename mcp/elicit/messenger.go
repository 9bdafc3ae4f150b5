package elicit

import (
	"context"

	"github.com/trellis-ai/trellis/operators"
)

// Scope says whose run a [Messenger] serves.
type Scope struct {
	ConversationID string
	UserID         string
	// ToolCallID, when the messenger serves a single tool call.
	ToolCallID string
}

// Messenger returns an operators.Messenger whose Elicit waits in m, and
// whose Progress, Direct and Stream go to base (nil means
// [operators.NopMessenger]). Every elicitation is registered under scope
// and reported to hooks (emit elicitation.request from Requested and
// elicitation.response from Resolved). Give it to the run's
// [operators.Call]; MCP servers' elicitations and operators' Confirm and
// Choose then wait for POST /api/v1/elicitation/respond.
func (m *Manager) Messenger(base operators.Messenger, scope Scope, hooks Hooks) operators.Messenger {
	if base == nil {
		base = operators.NopMessenger{}
	}
	return &messenger{Messenger: base, m: m, scope: scope, hooks: hooks}
}

type messenger struct {
	operators.Messenger
	m     *Manager
	scope Scope
	hooks Hooks
}

var _ operators.Messenger = (*messenger)(nil)

func (ms *messenger) Elicit(ctx context.Context, r operators.ElicitRequest) (operators.ElicitResponse, error) {
	return ms.m.Ask(ctx, Request{
		ElicitRequest: r, ConversationID: ms.scope.ConversationID, UserID: ms.scope.UserID, ToolCallID: ms.scope.ToolCallID,
	}, ms.hooks)
}
