package nodes

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/trellis-ai/trellis/graph"
)

// initialize starts a turn: it checks the input, resets the per-turn
// fields, appends the user's message, and lets the middleware prepare
// the turn (TurnStarter: the window folds earlier turns into the rolling
// summary, documents and cognition load their context, each bounding its
// own work; on failure the turn goes on without it).
func (a *Agent) initialize(ctx context.Context, s ChatState) (graph.Command[ChatState], error) {
	query := strings.TrimSpace(s.Input.Message)
	if query == "" {
		return graph.Command[ChatState]{}, fmt.Errorf("nodes: initialize: %w: empty message", ErrInvalidInput)
	}
	turn := s.Turn + 1
	var sets []func(*ChatState)
	if len(a.chain.starts) > 0 {
		conversationID := s.Input.ConversationID
		sets = a.chain.startTurn(ctx, &s, func(name string, err error) {
			a.log.LogAttrs(ctx, slog.LevelWarn, "initialize: middleware "+name+" failed; the turn goes on without it",
				slog.String("conversation_id", conversationID), slog.Any("error", err))
		})
	}
	return graph.Command[ChatState]{
		Update: ChatState{Messages: []Message{{Role: RoleUser, Content: query, Turn: turn}}},
		// Per-turn fields are set here, not in Update: Overwrite applies
		// after Update and would undo it.
		Overwrite: func(st *ChatState) {
			resetTurn(st)
			st.Turn = turn
			for _, set := range sets {
				if set != nil {
					set(st)
				}
			}
		},
	}, nil
}
