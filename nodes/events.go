package nodes

import (
	"context"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
)

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
