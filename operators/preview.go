package operators

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/trellis-ai/trellis/events"
)

// Previewer is a local [Tool] that can show what a call would change
// before it runs: the approval of the call shows it (a unified diff for
// a file tool, say; events.ApprovalRequired's Diff).
type Previewer interface {
	Tool
	// Preview returns the change the call with args would make, "" when
	// there is nothing to show. It must change nothing.
	Preview(ctx context.Context, call Call, args json.RawMessage) (string, error)
}

// Preview is the change a call to the local tool name with args would
// make, as its [Previewer] shows it; "" for a tool that shows none, and
// when the preview fails (logged: the approval is asked without it).
func (p *Provider) Preview(ctx context.Context, name string, args json.RawMessage, call Call) string {
	lt, ok := p.cfg.Local.lookup(name)
	if !ok {
		return ""
	}
	pv, ok := lt.tool.(Previewer)
	if !ok {
		return ""
	}
	call.Tool = name
	out, err := pv.Preview(ctx, call, normalizeArgs(args))
	if err != nil {
		p.log.LogAttrs(ctx, slog.LevelDebug, "no preview of the call", slog.String("tool", name), slog.String("error", err.Error()))
		return ""
	}
	return out
}

// Emitter is a [Messenger] that can put an event of the vocabulary on
// the run's stream (the agent's messenger is one).
type Emitter interface {
	Emit(ctx context.Context, p events.Payload) error
}

// Emit puts p on the stream of the call's run, when the call's
// Messenger is an [Emitter]; otherwise (no run is listening) it does
// nothing.
func (c Call) Emit(ctx context.Context, p events.Payload) error {
	if e, ok := c.Messenger.(Emitter); ok {
		return e.Emit(ctx, p)
	}
	return nil
}

// Emit passes the event on when the tracked Messenger is an [Emitter].
func (d *directTracker) Emit(ctx context.Context, p events.Payload) error {
	if e, ok := d.Messenger.(Emitter); ok {
		return e.Emit(ctx, p)
	}
	return nil
}
