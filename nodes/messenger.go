package nodes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/trellis-ai/trellis/operators"
)

// messenger is the operators.Messenger of one tool call: what the tool
// tells the user becomes the run's events (tool.progress,
// direct.response, response.chunk, elicitation.*), and what it shows
// directly is kept for the state. Safe for concurrent use.
type messenger struct {
	// ctx is the node's context, through which events reach the run's
	// stream whatever context the tool passes.
	ctx            context.Context
	elicitor       Elicitor
	conversationID string
	toolCallID     string

	mu       sync.Mutex
	direct   []DirectResponse
	streamed strings.Builder
}

var _ operators.Messenger = (*messenger)(nil)

func (m *messenger) Progress(_ context.Context, p operators.ProgressEvent) error {
	return emit(m.ctx, &ToolProgress{ToolCallID: m.toolCallID, Progress: p.Progress, Total: p.Total, Message: p.Message})
}

func (m *messenger) Direct(_ context.Context, d operators.DirectEvent) error {
	dr := DirectResponse{ToolCallID: m.toolCallID, Content: d.Content, ContentType: string(d.ContentType), WidgetType: d.WidgetType}
	if dr.ContentType == "" {
		dr.ContentType = string(operators.OutputText)
	}
	m.mu.Lock()
	m.direct = append(m.direct, dr)
	m.mu.Unlock()
	return emit(m.ctx, &DirectResponseEvent{Content: dr.Content, ContentType: dr.ContentType, WidgetType: dr.WidgetType, ToolCallID: dr.ToolCallID})
}

func (m *messenger) Stream(_ context.Context, c operators.StreamChunk) error {
	m.mu.Lock()
	m.streamed.WriteString(c.Content)
	m.mu.Unlock()
	if c.Content == "" {
		return nil
	}
	return emit(m.ctx, &ResponseChunk{Content: c.Content})
}

// Elicit asks the user through the Elicitor, between elicitation.request
// and elicitation.response events. Without an Elicitor it declines with
// operators.ErrNoUser.
func (m *messenger) Elicit(ctx context.Context, r operators.ElicitRequest) (operators.ElicitResponse, error) {
	if m.elicitor == nil {
		return operators.ElicitResponse{Action: operators.ElicitDecline},
			fmt.Errorf("%w: %s asked %q, but this agent has no way to ask the user (no Elicitor configured)", operators.ErrNoUser, r.Source, r.Message)
	}
	if r.ElicitationID == "" {
		r.ElicitationID = newID("elicit_")
	}
	schema := json.RawMessage("{}")
	if r.Schema != nil {
		if b, err := json.Marshal(r.Schema); err == nil {
			schema = b
		}
	}
	_ = emit(m.ctx, &ElicitationRequest{ElicitationID: r.ElicitationID, Source: r.Source, Message: r.Message, Schema: schema})
	resp, err := m.elicitor.Elicit(ctx, m.conversationID, r)
	action := string(resp.Action)
	if err != nil && action == "" {
		action = string(operators.ElicitCancel)
	}
	_ = emit(m.ctx, &ElicitationResponse{ElicitationID: r.ElicitationID, Action: action})
	if err != nil {
		return resp, fmt.Errorf("nodes: elicitation %s: %w", r.ElicitationID, err)
	}
	resp.ElicitationID = r.ElicitationID
	return resp, nil
}

// shown returns what the tool showed the user directly: its direct
// responses and, as one text response, what it streamed.
func (m *messenger) shown() []DirectResponse {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.direct
	if m.streamed.Len() > 0 {
		out = append(out, DirectResponse{ToolCallID: m.toolCallID, Content: m.streamed.String(), ContentType: string(operators.OutputText)})
	}
	return out
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
