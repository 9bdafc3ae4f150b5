package nodes

import (
	"context"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
)

// emitFallback is every run's llm.FallbackListener: a model call of the
// run moving to a fallback model is the run's model.fallback event.
func emitFallback(ctx context.Context, f *events.ModelFallback) { _ = emit(ctx, f) }

// emit sends a payload to the run's stream. It fails only when the run is
// over, which the node learns from its context soon enough, so callers
// may ignore the error.
//
// The payload goes as it is (a pointer, which an interface holds without
// allocating) and runGraph wraps it in its Event; an Event would be boxed
// on every emit.
func emit(ctx context.Context, p events.Payload) error {
	return graph.Emit(ctx, p)
}
