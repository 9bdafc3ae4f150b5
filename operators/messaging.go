package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
)

// Messenger is how a running tool talks to the user. The service implements
// it: it puts each call's payload (events' own, where the event has one) on
// the run's stream, and answers Elicit through its waiting room. Methods must be safe for
// concurrent use (parallel tool calls share a run). A tool reaches the
// Messenger through its [Call], never through a global.
type Messenger interface {
	// Progress emits tool.progress.
	Progress(ctx context.Context, p events.ToolProgress) error
	// Direct emits direct.response: content shown to the user without
	// passing through the writer.
	Direct(ctx context.Context, d events.DirectResponse) error
	// Stream emits one piece of content streamed to the user
	// (response.chunk).
	Stream(ctx context.Context, c StreamChunk) error
	// Elicit emits elicitation.request and blocks until the user answers,
	// declines, cancels, or ctx ends. Implementations assign
	// ElicitationID when it is empty. When the run cannot wait any longer
	// it fails with [ErrAskLater]: the tool must return at once.
	Elicit(ctx context.Context, r ElicitRequest) (ElicitResponse, error)
}

// StreamChunk is one piece of content a tool streams to the user; Done
// marks the last one.
type StreamChunk struct {
	ToolCallID  string     `json:"tool_call_id,omitempty"`
	Content     string     `json:"content"`
	ContentType OutputType `json:"content_type,omitempty"`
	Done        bool       `json:"done,omitempty"`
}

// ElicitRequest is the payload of elicitation.request.
type ElicitRequest struct {
	ElicitationID string `json:"elicitation_id"`
	// Source is the asking tool's name.
	Source  string `json:"source"`
	Message string `json:"message"`
	// Schema describes the object the user is asked to supply.
	Schema *jsonschema.Schema `json:"schema"`
	// Replayable says the asker can take a late answer: a call that
	// ended with [ErrAskLater] may be issued again, and the tool then asks
	// the same question again before doing anything it must not repeat
	// (an MCP server on the 2026-07-28 revision, an operator). A question
	// that is not replayable expires when its call ends.
	Replayable bool `json:"-"`
}

// ElicitResponse is the user's answer; Content is set when Action is
// accept and satisfies the request's schema.
type ElicitResponse struct {
	ElicitationID string              `json:"elicitation_id,omitempty"`
	Action        events.ElicitAction `json:"action"`
	Content       json.RawMessage     `json:"content,omitempty"`
	// Expired, when set, says that nobody answered before the
	// question's deadline, which decided Action; the agent announces it
	// (elicitation.expired) before the response. Tools need not look.
	Expired *events.ElicitationExpired `json:"-"`
}

// Call carries what a tool needs to know about the call it serves, apart
// from the context: who is asking, and how to reach them.
type Call struct {
	// Tool is the name the tool was called by; the provider sets it.
	Tool           string
	ToolCallID     string
	ConversationID string
	UserID         string
	// DocumentIDs, when not empty, limit the document tools to these
	// documents of the conversation (the chat request's document_ids).
	DocumentIDs []string
	// Context is the chat request's "context" object, as compact JSON:
	// data the client supplied with the user's message (a page's state,
	// a locale), not instructions; nil when the request had none.
	Context json.RawMessage
	// Messenger reaches the user; nil means nobody is attached
	// ([NopMessenger]).
	Messenger Messenger
	// Model is the run's model, used by operators; nil means the operator
	// registry's default.
	Model llms.Model
}

func (c Call) messenger() Messenger {
	if c.Messenger == nil {
		return NopMessenger{}
	}
	return c.Messenger
}

// Progress reports n of total (total 0 when unknown) with a message.
func (c Call) Progress(ctx context.Context, n, total float64, message string) error {
	return c.messenger().Progress(ctx, events.ToolProgress{ToolCallID: c.ToolCallID, Progress: n, Total: total, Message: message})
}

// Send shows content directly to the user, bypassing the writer.
func (c Call) Send(ctx context.Context, content Content) error {
	return c.messenger().Direct(ctx, events.DirectResponse{
		ToolCallID:  c.ToolCallID,
		Content:     content.String(),
		ContentType: string(content.Type),
		WidgetType:  content.WidgetType,
	})
}

// SendText shows text directly to the user.
func (c Call) SendText(ctx context.Context, text string) error {
	return c.Send(ctx, TextContent(text))
}

// SendWidget shows a widget of widgetType (e.g. "chart") to the user.
func (c Call) SendWidget(ctx context.Context, widgetType, markup string) error {
	return c.Send(ctx, WidgetContent(widgetType, markup))
}

// Stream sends one chunk of streamed content; done marks the last.
func (c Call) Stream(ctx context.Context, content string, done bool) error {
	return c.messenger().Stream(ctx, StreamChunk{ToolCallID: c.ToolCallID, Content: content, ContentType: OutputText, Done: done})
}

// Elicit asks the user for an object matching schema. The question is
// replayable: if the run parks before the user answers (the call then
// fails with [ErrAskLater]), the tool runs again from its start once they
// do, and the same question returns the answer at once. So ask before
// doing anything that must not happen twice.
func (c Call) Elicit(ctx context.Context, message string, schema *jsonschema.Schema) (ElicitResponse, error) {
	return c.messenger().Elicit(ctx, ElicitRequest{Source: c.Tool, Message: message, Schema: schema, Replayable: true})
}

// Confirm asks a yes/no question. A decline is a plain no; a cancel returns
// [ErrElicitationCanceled]; no user attached returns [ErrNoUser].
func (c Call) Confirm(ctx context.Context, question string) (bool, error) {
	schema := &jsonschema.Schema{
		Type:       "object",
		Properties: map[string]*jsonschema.Schema{"confirm": {Type: "boolean", Description: question}},
		Required:   []string{"confirm"},
	}
	var out struct {
		Confirm bool `json:"confirm"`
	}
	ok, err := c.elicitInto(ctx, question, schema, &out)
	return ok && out.Confirm, err
}

// Choose asks the user to pick one of options and returns the choice.
// A decline returns "" and no error.
func (c Call) Choose(ctx context.Context, question string, options []string) (string, error) {
	if len(options) == 0 {
		return "", fmt.Errorf("operators: choose %q: no options", question)
	}
	enum := make([]any, len(options))
	for i, o := range options {
		enum[i] = o
	}
	schema := &jsonschema.Schema{
		Type:       "object",
		Properties: map[string]*jsonschema.Schema{"choice": {Type: "string", Enum: enum, Description: question}},
		Required:   []string{"choice"},
	}
	var out struct {
		Choice string `json:"choice"`
	}
	ok, err := c.elicitInto(ctx, question, schema, &out)
	if !ok || err != nil {
		return "", err
	}
	for _, o := range options {
		if o == out.Choice {
			return o, nil
		}
	}
	return "", fmt.Errorf("operators: choose %q: answer %q is not an option", question, out.Choice)
}

// elicitInto runs an elicitation and decodes an accepted answer into dst.
// It reports whether the user accepted.
func (c Call) elicitInto(ctx context.Context, message string, schema *jsonschema.Schema, dst any) (bool, error) {
	resp, err := c.Elicit(ctx, message, schema)
	if err != nil {
		return false, err
	}
	switch resp.Action {
	case events.ElicitAccept:
		if err := json.Unmarshal(resp.Content, dst); err != nil {
			return false, fmt.Errorf("operators: elicitation answer for %q: %w", message, err)
		}
		return true, nil
	case events.ElicitDecline:
		return false, nil
	default:
		return false, ErrElicitationCanceled
	}
}

// NopMessenger serves runs with no user attached: progress, direct content
// and chunks are dropped, and Elicit declines with [ErrNoUser].
type NopMessenger struct{}

func (NopMessenger) Progress(context.Context, events.ToolProgress) error { return nil }
func (NopMessenger) Direct(context.Context, events.DirectResponse) error { return nil }
func (NopMessenger) Stream(context.Context, StreamChunk) error           { return nil }
func (NopMessenger) Elicit(_ context.Context, r ElicitRequest) (ElicitResponse, error) {
	return ElicitResponse{Action: events.ElicitDecline}, fmt.Errorf("%w: %s asked %q", ErrNoUser, r.Source, r.Message)
}

var _ Messenger = NopMessenger{}
