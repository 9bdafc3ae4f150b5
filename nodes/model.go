package nodes

import (
	"context"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/llm"
)

// callModel makes one model call of a node through the middleware:
// BeforeModel hooks first to last, the call, AfterModel hooks last to
// first. mc.Messages starts as the state's Messages (the window
// middleware narrows it; the oldest may be in pages of history); extra messages follow them (a repair). The
// call's usage counts against the run's budget.
func (a *Agent) callModel(ctx context.Context, model llms.Model, mc *ModelCall, extra ...llms.MessageContent) (*llms.ContentResponse, error) {
	if mc.Messages == nil {
		mc.Messages = mc.State.Messages
	}
	if err := a.chain.beforeModel(ctx, mc); err != nil {
		return nil, err
	}
	if mc.historyTools && hasToolMessages(mc.Messages) {
		_, defs := a.catalog(mc.State)
		for _, t := range a.chain.extraTools(mc.State) {
			defs = append(defs[:len(defs):len(defs)], t.Def)
		}
		mc.Options = append(mc.Options, llms.WithTools(defs), llms.WithToolChoice("none"))
	}
	msgs := toLLM(mc.System, mc.Messages)
	if len(extra) > 0 {
		msgs = append(msgs, extra...)
	}
	resp, err := model.GenerateContent(ctx, msgs, mc.Options...)
	if b := budgetFrom(ctx); b != nil && resp != nil {
		b.spend(llm.UsageFrom(resp))
	}
	if err != nil {
		return nil, err
	}
	mc.Response = resp
	if err := a.chain.afterModel(ctx, mc); err != nil {
		return nil, err
	}
	return mc.Response, nil
}

// thinking returns the options that make the model named name think and
// stream its reasoning as the node's reasoning chunks (reasoning.chunk
// events, see runGraph), or nil for a model not configured to think
// (llm.ModelConfig.Thinking): such a model costs nothing here. Where a
// provider cannot think on a call (Anthropic within a tool loop), the llm
// package drops the thinking.
func (a *Agent) thinking(ctx context.Context, name string) []llms.CallOption {
	cfg, err := a.models.Resolve(name)
	if err != nil || !cfg.Thinking {
		return nil
	}
	return append(llm.ThinkingOptions(cfg, 0), llms.WithStreamingReasoningFunc(func(_ context.Context, reasoning, _ []byte) error {
		// The text chunks some providers also pass here go out through
		// the streaming func, if the node streams text at all.
		if len(reasoning) == 0 {
			return nil
		}
		return graph.EmitMessage(ctx, graph.MessageChunk{Text: string(reasoning), Reasoning: true})
	}))
}
