package runs

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-ai/trellis/store"
)

// traceSegment starts the span of a run segment ("invoke_agent
// trellis", GenAI conventions), the parent of its nodes' spans, when the
// agent traces (Config.Agent.Tracer); it returns the context the agent
// runs in and the span, or rn.ctx and nil.
func (m *Service) traceSegment(rn *Run) (context.Context, trace.Span) {
	t := m.cfg.Agent.Tracer
	if t == nil {
		return rn.ctx, nil
	}
	return t.Start(rn.ctx, "invoke_agent trellis", trace.WithAttributes(
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName("trellis"),
		semconv.GenAIConversationID(rn.conversationID),
		attribute.String("trellis.run.id", rn.id),
		attribute.Bool("trellis.run.recovered", rn.recovered),
	))
}

// traceEnd records how the segment ended on its span.
func traceEnd(rn *Run, status string) {
	if rn.span == nil {
		return
	}
	rn.span.SetAttributes(attribute.String("trellis.run.status", status),
		semconv.GenAIUsageInputTokens(rn.usage.InputTokens), semconv.GenAIUsageOutputTokens(rn.usage.OutputTokens))
	if status == string(store.RunFailed) {
		rn.span.SetStatus(codes.Error, "the run failed")
	}
}
