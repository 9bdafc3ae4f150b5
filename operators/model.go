package operators

import (
	"context"

	"github.com/tmc/langchaingo/llms"
)

// GuardModel wraps m so every GenerateContent runs under a [Guard] named
// name. Zero fields of cfg take [LLMDefaults]. The wrapper keeps
// llms.ReasoningModel: SupportsReasoning reports what m reports.
//
// Streaming calls are retried only as a whole, so a retried call may
// stream some text twice; callers that stream to users should give
// MaxAttempts 1 or guard below the stream. If the llm package already
// guards its models, do not wrap them again (attempts would multiply).
func GuardModel(name string, m llms.Model, cfg ResilienceConfig, listener BreakerListener) llms.Model {
	return &guardedModel{
		model: m,
		guard: newGuard[*llms.ContentResponse](name, cfg.withDefaults(LLMDefaults()), listener),
	}
}

type guardedModel struct {
	model llms.Model
	guard *Guard[*llms.ContentResponse]
}

var _ llms.ReasoningModel = (*guardedModel)(nil)

func (g *guardedModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	return g.guard.Do(ctx, func(ctx context.Context) (*llms.ContentResponse, error) {
		return g.model.GenerateContent(ctx, msgs, opts...)
	})
}

func (g *guardedModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, g, prompt, opts...)
}

func (g *guardedModel) SupportsReasoning() bool {
	rm, ok := g.model.(llms.ReasoningModel)
	return ok && rm.SupportsReasoning()
}
