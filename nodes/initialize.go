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
	history, turn := numbered(s.Input.History, s.Turn)
	var sets []func(*ChatState)
	if len(a.chain.starts) > 0 {
		conversationID := s.Input.ConversationID
		sets = a.chain.startTurn(ctx, &s, func(name string, err error) {
			a.log.LogAttrs(ctx, slog.LevelWarn, "initialize: middleware "+name+" failed; the turn goes on without it",
				slog.String("conversation_id", conversationID), slog.Any("error", err))
		})
	}
	msgs := turnMessages(history, query, s.Input.Continued, turn)
	return graph.Command[ChatState]{
		Update: ChatState{Messages: msgs},
		// Per-turn fields are set here, not in Update: Overwrite applies
		// after Update and would undo it.
		Overwrite: func(st *ChatState) {
			resetTurn(st)
			// History and Continued are in Messages now; kept in the
			// input too, every checkpoint of the turn would store them
			// twice.
			st.Input.History, st.Input.Continued = nil, nil
			st.Turn = turn
			for _, set := range sets {
				if set != nil {
					set(st)
				}
			}
			if st.MessagesFrom != s.MessagesFrom {
				// The window moved messages into a page of history: the
				// overwritten Messages replaces what Update appended.
				st.Messages = append(st.Messages, msgs...)
			}
		},
	}, nil
}

// numbered returns a stateless client's history with turn numbers, each
// user message starting a turn after last, and the number of the turn
// the new message starts.
func numbered(history []Message, last int) ([]Message, int) {
	if len(history) == 0 {
		return nil, last + 1
	}
	out := make([]Message, len(history))
	turn := last
	for i, m := range history {
		if m.Role == RoleUser || turn == last {
			turn++
		}
		m.Turn = turn
		out[i] = m
	}
	return out, turn + 1
}

// turnMessages is what a turn adds to the conversation: the client's
// history, the user's message, and what the client sent after it.
func turnMessages(history []Message, query string, continued []Message, turn int) []Message {
	out := make([]Message, 0, len(history)+1+len(continued))
	out = append(out, history...)
	out = append(out, Message{Role: RoleUser, Content: query, Turn: turn})
	for _, m := range continued {
		m.Turn = turn
		out = append(out, m)
	}
	return out
}
