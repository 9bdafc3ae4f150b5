package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
)

// Elicit answers a server's request for user input, in both protocol eras:
// a 2026-07-28 input request (called from CallTool's retry loop with the
// call's context) and a session revision's elicitation/create (called by
// the transport). It asks the call's Messenger — in the service, the
// elicitation manager, which emits elicitation.request and waits for
// POST /api/v1/elicitation/respond; the provider stops the call's timeout
// while it waits (ctx derives from the call's).
//
// When the run parks on the question instead (operators.ErrAskLater), a
// 2026-07-28 call is abandoned, to be issued again with the answer; a
// session revision's server is told the user cancelled, and the question
// expires with the call.
func (c *conn) Elicit(ctx context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	f := inflightFrom(ctx)
	if f == nil {
		// A legacy stdio request names no call; take the one under way.
		if f = c.calls.latest(); f == nil {
			c.srv.log.LogAttrs(ctx, slog.LevelWarn, "elicitation with no tool call under way; declined",
				slog.String("message", req.Params.Message))
			return elicitResult(events.ElicitDecline, nil), nil
		}
		var stop func() bool
		ctx, stop = mergeCancel(f.ctx, ctx)
		defer stop()
	}
	if req.Params.Mode == mcpgo.ElicitationModeURL {
		c.srv.log.LogAttrs(ctx, slog.LevelWarn, "URL-mode elicitation is not supported; declined",
			slog.String("tool", f.tool), slog.String("url", req.Params.URL))
		return elicitResult(events.ElicitDecline, nil), nil
	}
	source := f.call.Tool
	if source == "" {
		source = c.srv.cfg.Name + "." + f.tool
	}
	schema, err := toSchema(req.Params.RequestedSchema)
	if err != nil {
		c.srv.log.LogAttrs(ctx, slog.LevelWarn, "elicitation schema cannot be read; answers are not validated",
			slog.String("tool", f.tool), slog.Any("error", err))
	}
	messenger := f.call.Messenger
	if messenger == nil {
		messenger = operators.NopMessenger{}
	}
	// On the 2026-07-28 revision the server keeps nothing between the
	// rounds of a call: the call can be issued again later and the server
	// asks again, so the question can take a late answer.
	modern := mcpgo.IsModernProtocol(c.version)
	resp, err := messenger.Elicit(ctx, operators.ElicitRequest{Source: source, Message: req.Params.Message, Schema: schema, Replayable: modern})
	switch {
	case errors.Is(err, operators.ErrNoUser):
		return elicitResult(events.ElicitDecline, nil), nil
	case errors.Is(err, operators.ErrAskLater) && modern:
		// The run parks on the question; abandoning the call leaves the
		// server nothing to clean up.
		return nil, err
	case err != nil:
		c.srv.log.LogAttrs(ctx, slog.LevelInfo, "elicitation ended without an answer; sending cancel",
			slog.String("tool", f.tool), slog.Any("error", err))
		return elicitResult(events.ElicitCancel, nil), nil
	}
	var content map[string]any
	if resp.Action == events.ElicitAccept {
		if err := json.Unmarshal(resp.Content, &content); err != nil {
			return elicitResult(events.ElicitCancel, nil), nil
		}
	}
	return elicitResult(resp.Action, content), nil
}

func elicitResult(action events.ElicitAction, content map[string]any) *mcpgo.ElicitationResult {
	r := &mcpgo.ElicitationResult{}
	r.Action = mcpgo.ElicitationResponseAction(action)
	if content != nil {
		r.Content = content
	}
	return r
}

var _ client.ElicitationHandler = (*conn)(nil)

// toSchema reads an elicitation's requested schema.
func toSchema(v any) (*jsonschema.Schema, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// mergeCancel returns a context with a's values that also ends when b
// ends.
func mergeCancel(a, b context.Context) (context.Context, func() bool) {
	ctx, cancel := context.WithCancelCause(a)
	stop := context.AfterFunc(b, func() { cancel(context.Cause(b)) })
	return ctx, func() bool { cancel(nil); return stop() }
}
