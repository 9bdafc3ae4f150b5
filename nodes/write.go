package nodes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/llm"
)

// write produces the final text with the model the user asked for,
// streaming its tokens (they reach the run's events as response.chunk).
// It follows the turn's brief: an answer, a synthesis of tool results
// with citations, or an honest account of what failed — whose fallback
// text is written when the model fails.
func (a *Agent) write(ctx context.Context, s ChatState) (ChatState, error) {
	brief := s.Brief
	if brief.Kind == "" {
		brief = Brief{Kind: BriefAnswer, Instructions: answerInstructions}
		if len(s.DataChunks) > 0 {
			brief = Brief{Kind: BriefSynthesis, Instructions: synthesisInstructions(&s)}
		}
	}
	var (
		text  string
		usage events.Usage
		err   error
	)
	if brief.Fallback != "" && strings.HasPrefix(s.BudgetExceeded, "tokens") {
		// The tokens ran out: no model call; the fallback says it all.
		err = errBudget
	} else {
		text, usage, err = a.generate(ctx, &s, brief)
	}
	if err != nil {
		if brief.Fallback == "" {
			return ChatState{}, fmt.Errorf("nodes: write: %w", err)
		}
		a.log.LogAttrs(ctx, slog.LevelWarn, "write: model call failed; writing the fallback",
			slog.String("conversation_id", s.Input.ConversationID), slog.Any("error", err))
		text = brief.Fallback
		_ = graph.EmitMessage(ctx, graph.MessageChunk{ID: "answer", Text: text})
	}
	outcome := s.Outcome
	if outcome == "" {
		outcome = OutcomeAnswered
	}
	return ChatState{FinalResponse: text, Brief: brief, Outcome: outcome, Usage: usage, TurnUsage: usage}, nil
}

// errBudget: the run's token budget is spent.
var errBudget = errors.New("the run's token budget is spent")

// generate makes the streaming model call of the write node.
func (a *Agent) generate(ctx context.Context, s *ChatState, brief Brief) (string, events.Usage, error) {
	model, err := a.models.Model(ctx, s.Input.Model)
	if err != nil {
		return "", events.Usage{}, err
	}
	var streamed atomic.Bool
	// Tokens go out through the node's context, whatever context the
	// provider hands its streaming func.
	mc := &ModelCall{Node: NodeWrite, State: s, System: a.system(s, NodeWrite, brief.Instructions),
		Options: append([]llms.CallOption{llms.WithStreamingFunc(llm.TextStream(func(_ context.Context, chunk []byte) error {
			streamed.Store(true)
			return graph.EmitMessage(ctx, graph.MessageChunk{ID: "answer", Text: string(chunk)})
		}))}, a.thinking(ctx, s.Input.Model)...)}
	// Some providers refuse tool calls in the history without tool
	// definitions; offer them then, and ask for text.
	mc.historyTools = true
	resp, err := a.callModel(ctx, model, mc)
	if err != nil {
		return "", events.Usage{}, err
	}
	text := strings.TrimSpace(llm.TextFrom(resp))
	if text == "" {
		text = "I'm sorry — I could not put an answer into words this time."
	}
	if !streamed.Load() {
		_ = graph.EmitMessage(ctx, graph.MessageChunk{ID: "answer", Text: text})
	}
	return text, llm.UsageFrom(resp), nil
}
