package nodes

import (
	"context"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
)

// callModel makes one model call of a node through the middleware:
// BeforeModel hooks first to last, the call, AfterModel hooks last to
// first. mc.Messages starts as the whole conversation (the window
// middleware narrows it); extra messages follow them (a repair). The
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
