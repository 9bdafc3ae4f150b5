package nodes

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-ai/trellis/graph"
)

// attrNode names a node's span; model calls carry it too (package llm).
const attrNode = attribute.Key("trellis.node")

// traced returns fn in a span named after the node, or fn itself when
// tracing is off. The span is the parent of the node's model and tool
// calls. A pause for an interrupt is no error.
func (a *Agent) traced(name string, fn nodeFunc) nodeFunc {
	t := a.opts.Tracer
	if t == nil {
		return fn
	}
	return func(ctx context.Context, s ChatState) (ChatState, error) {
		ctx, span := t.Start(ctx, "node "+name, trace.WithAttributes(attrNode.String(name)))
		defer span.End()
		out, err := fn(ctx, s)
		endSpan(span, err)
		return out, err
	}
}

// tracedCommand is traced for a command node.
func (a *Agent) tracedCommand(name string, fn commandFunc) commandFunc {
	t := a.opts.Tracer
	if t == nil {
		return fn
	}
	return func(ctx context.Context, s ChatState) (graph.Command[ChatState], error) {
		ctx, span := t.Start(ctx, "node "+name, trace.WithAttributes(attrNode.String(name)))
		defer span.End()
		out, err := fn(ctx, s)
		endSpan(span, err)
		return out, err
	}
}

func endSpan(span trace.Span, err error) {
	if err != nil && !errors.Is(err, graph.ErrInterrupted) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// toolSpan starts a tool call's span ("execute_tool <tool>"), or returns
// ctx and nil when tracing is off.
func (a *Agent) toolSpan(ctx context.Context, tool, callID, source string) (context.Context, trace.Span) {
	if a.opts.Tracer == nil {
		return ctx, nil
	}
	return a.opts.Tracer.Start(ctx, "execute_tool "+tool, trace.WithAttributes(
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(tool),
		semconv.GenAIToolCallID(callID),
		semconv.GenAIToolType("function"),
		attribute.String("trellis.tool.source", source),
	))
}
