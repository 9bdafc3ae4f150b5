package llm

import (
	"context"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// tracedModel puts every model call in a span following the OpenTelemetry
// GenAI conventions ("chat <model>": operation, provider, requested
// model, token usage, the calling node). Only models of a registry made
// with Config.Tracer are wrapped: with tracing off nothing is.
type tracedModel struct {
	inner    llms.Model
	tracer   trace.Tracer
	name     string // span name
	provider string
	model    string
}

type tracedReasoningModel struct{ *tracedModel }

var (
	_ llms.Model          = (*tracedModel)(nil)
	_ llms.ReasoningModel = (*tracedReasoningModel)(nil)
)

func traced(m llms.Model, t trace.Tracer, cfg ModelConfig) llms.Model {
	tm := &tracedModel{inner: m, tracer: t, name: "chat " + cfg.ID, provider: string(cfg.Provider), model: cfg.ID}
	if _, ok := m.(llms.ReasoningModel); ok {
		return &tracedReasoningModel{tm}
	}
	return tm
}

// SupportsReasoning forwards to the wrapped model.
func (m *tracedReasoningModel) SupportsReasoning() bool {
	return m.inner.(llms.ReasoningModel).SupportsReasoning()
}

// Unwrap returns the wrapped model.
func (m *tracedModel) Unwrap() llms.Model { return m.inner }

// Call generates from a single human prompt.
func (m *tracedModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// GenerateContent calls the wrapped model in a span.
func (m *tracedModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	ctx, span := m.tracer.Start(ctx, m.name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(m.provider),
		semconv.GenAIRequestModel(m.model),
		attrNode.String(NodeFrom(ctx)),
	))
	defer span.End()
	resp, err := m.inner.GenerateContent(ctx, msgs, options...)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return resp, err
	}
	u := UsageFrom(resp)
	span.SetAttributes(semconv.GenAIUsageInputTokens(u.InputTokens), semconv.GenAIUsageOutputTokens(u.OutputTokens))
	if u.ThinkingTokens > 0 {
		span.SetAttributes(semconv.GenAIUsageReasoningOutputTokens(u.ThinkingTokens))
	}
	if u.CacheReadTokens > 0 {
		span.SetAttributes(semconv.GenAIUsageCacheReadInputTokens(u.CacheReadTokens))
	}
	return resp, nil
}

// attrNode names the agent node that made a model call.
const attrNode = attribute.Key("trellis.node")
