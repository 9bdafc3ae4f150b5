package nodes

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/trellis-ai/trellis/graph"
)

// initialize starts a turn: it checks the input, resets the per-turn
// fields, appends the user's message, folds earlier turns that outgrew
// the window into the rolling summary, and loads the user's cognitive
// context and the conversation's document summaries (each bounded by
// Options.ContextTimeout; on failure the turn goes on without them).
func (a *Agent) initialize(ctx context.Context, s ChatState) (graph.Command[ChatState], error) {
	query := strings.TrimSpace(s.Input.Message)
	if query == "" {
		return graph.Command[ChatState]{}, fmt.Errorf("nodes: initialize: %w: empty message", ErrInvalidInput)
	}
	history, turn := numbered(s.Input.History, s.Turn)
	summary, upTo, folded, err := a.opts.Window.fold(ctx, &s)
	if err != nil {
		a.log.LogAttrs(ctx, slog.LevelWarn, "initialize: summarizing earlier turns failed; keeping them",
			slog.String("conversation_id", s.Input.ConversationID), slog.Any("error", err))
		folded = false
	}
	cognitive, docs := a.loadContext(ctx, &s)
	return graph.Command[ChatState]{
		Update: ChatState{Messages: turnMessages(history, query, s.Input.Continued, turn)},
		// Per-turn fields are set here, not in Update: Overwrite applies
		// after Update and would undo it.
		Overwrite: func(st *ChatState) {
			resetTurn(st)
			// History and Continued are in Messages now; kept in the
			// input too, every checkpoint of the turn would store them
			// twice.
			st.Input.History, st.Input.Continued = nil, nil
			st.Turn = turn
			st.Cognitive, st.DataSummaries = cognitive, docs
			if folded {
				st.Summary, st.SummaryUpTo = summary, upTo
			}
		},
	}, nil
}

// loadContext runs the configured loaders concurrently and waits for
// them at most Options.ContextTimeout; a loader that ignores its context
// is abandoned (its result, when it comes, is dropped).
func (a *Agent) loadContext(nodeCtx context.Context, s *ChatState) (string, []DataSummary) {
	cog, docs := a.opts.Cognition, a.opts.Documents
	if cog == nil && docs == nil {
		return "", nil
	}
	// The loaders run under a context of their own, cancelled with the
	// node's: a loader that overstays is abandoned, and must then hold
	// nothing of the node's context, which the engine reuses once the node
	// returns (even a deadline's timer reads its parent after waking us).
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.contextTimeout())
	defer cancel()
	stop := context.AfterFunc(nodeCtx, cancel)
	defer stop()
	// The loaders' goroutines capture what they need of s, never s: it
	// would then have to live on the heap.
	conversationID := s.Input.ConversationID
	logFail := func(what string, err error) {
		a.log.LogAttrs(ctx, slog.LevelWarn, "initialize: "+what+" unavailable",
			slog.String("conversation_id", conversationID), slog.Any("error", err))
	}
	cogc := make(chan string, 1)
	docc := make(chan []DataSummary, 1)
	wait := 0
	if cog != nil {
		wait++
		userID, query := s.Input.UserID, s.Input.Message
		go func() {
			c, err := cog(ctx, userID, query)
			if err != nil {
				logFail("cognitive context", err)
			}
			cogc <- c
		}()
	}
	if docs != nil {
		wait++
		user, conv, ids := s.Input.UserID, s.Input.ConversationID, s.Input.DocumentIDs
		go func() {
			d, err := docs.DocumentSummaries(ctx, user, conv, ids)
			if err != nil {
				logFail("document summaries", err)
			}
			docc <- d
		}()
	}
	var cognitive string
	var summaries []DataSummary
	for ; wait > 0; wait-- {
		select {
		case cognitive = <-cogc:
		case summaries = <-docc:
		case <-ctx.Done():
			logFail("context loaders", ctx.Err())
			return cognitive, summaries
		}
	}
	return cognitive, summaries
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
