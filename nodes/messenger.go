package nodes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
)

// messenger is the operators.Messenger of one tool call: what the tool
// tells the user becomes the run's events (tool.progress,
// direct.response, response.chunk, elicitation.*), and what it shows
// directly is kept for the state. Safe for concurrent use.
type messenger struct {
	// call is the call: its tool call id and its context (see
	// callContext), whose parent, the node's context, events reach the
	// run's stream through, whatever context the tool passes.
	call           callContext
	elicitor       Elicitor
	conversationID string
	requestID      string
	tool           string
	agent          string // the asking agent's path
	// calls, for a call the CallLog records (under call.key): a
	// question the call will be issued again with marks it asking while
	// it waits.
	calls CallLog
	// answers answer, at once, questions the call asked before the run
	// parked on them (by elicitation id).
	answers map[string]questionAnswered

	mu       sync.Mutex
	direct   []DirectResponse
	streamed strings.Builder
	asked    int             // questions asked so far
	parked   *events.Pending // the question that parked the run
}

var _ operators.Messenger = (*messenger)(nil)

func (m *messenger) Progress(_ context.Context, p events.ToolProgress) error {
	p.ToolCallID = m.call.toolCallID
	return emit(m.call.Context, &p)
}

// Emit puts an event of the tool's on the run's stream (operators.Emitter).
func (m *messenger) Emit(_ context.Context, p events.Payload) error {
	return emit(m.call.Context, p)
}

func (m *messenger) Direct(_ context.Context, d events.DirectResponse) error {
	d.ToolCallID = m.call.toolCallID
	d.ContentType = cmp.Or(d.ContentType, string(operators.OutputText))
	m.mu.Lock()
	m.direct = append(m.direct, DirectResponse{ToolCallID: d.ToolCallID, Content: d.Content, ContentType: d.ContentType, WidgetType: d.WidgetType})
	m.mu.Unlock()
	return emit(m.call.Context, &d)
}

func (m *messenger) Stream(_ context.Context, c operators.StreamChunk) error {
	m.mu.Lock()
	m.streamed.WriteString(c.Content)
	m.mu.Unlock()
	if c.Content == "" {
		return nil
	}
	return emit(m.call.Context, &events.ResponseChunk{Content: c.Content})
}

// Elicit asks the user through the Elicitor, between elicitation.request
// and elicitation.response events. Without an Elicitor it declines with
// operators.ErrNoUser.
func (m *messenger) Elicit(ctx context.Context, r operators.ElicitRequest) (operators.ElicitResponse, error) {
	if m.elicitor == nil {
		return operators.ElicitResponse{Action: events.ElicitDecline},
			fmt.Errorf("%w: %s asked %q, but this agent has no way to ask the user (no Elicitor configured)", operators.ErrNoUser, r.Source, r.Message)
	}
	m.mu.Lock()
	n := m.asked
	m.asked++
	m.mu.Unlock()
	r.ElicitationID = elicitationID(m.conversationID, m.requestID, m.call.toolCallID, n)
	if qa, ok := m.answers[r.ElicitationID]; ok { // answered while the run was parked
		return operators.ElicitResponse{ElicitationID: r.ElicitationID, Action: qa.Action, Content: qa.Content}, nil
	}
	schema := json.RawMessage("{}")
	if r.Schema != nil {
		if b, err := json.Marshal(r.Schema); err == nil {
			schema = b
		}
	}
	asking := m.calls != nil && r.Replayable
	if asking {
		// The call has done nothing yet and is issued again with the
		// answer: a crash while it waits must not leave it "may have
		// run". Recorded before the question is shown, as a client told
		// of it may see the process die at once.
		if err := m.calls.Asking(ctx, m.call.key); err != nil {
			return operators.ElicitResponse{ElicitationID: r.ElicitationID, Action: events.ElicitCancel},
				fmt.Errorf("nodes: elicitation %s: recording that the call asks: %w", r.ElicitationID, err)
		}
	}
	_ = emit(m.call.Context, &events.ElicitationRequest{ElicitationID: r.ElicitationID, Source: r.Source, Message: r.Message, Schema: schema})
	resp, err := m.elicitor.Elicit(ctx, m.conversationID, r)
	if asking && !errors.Is(err, operators.ErrAskLater) {
		// Answered: the call goes on, started again.
		if _, berr := m.calls.Begin(ctx, m.call.key, m.tool, ""); berr != nil {
			return operators.ElicitResponse{ElicitationID: r.ElicitationID, Action: events.ElicitCancel},
				fmt.Errorf("nodes: elicitation %s: recording that the call goes on: %w", r.ElicitationID, berr)
		}
	}
	if errors.Is(err, operators.ErrAskLater) {
		// Nobody answered while the run could wait: the question stays
		// pending, the call ends, and the run parks on the question.
		m.mu.Lock()
		if m.parked == nil {
			m.parked = &events.Pending{Kind: events.PendingElicitation, ToolCallID: m.call.toolCallID, Tool: m.tool, ElicitationID: r.ElicitationID,
				Source: r.Source, Message: r.Message, Schema: schema, Replayable: r.Replayable, Namespace: m.agent}
		}
		m.mu.Unlock()
		// The tool returns on this error (operators.ErrAskLater says so),
		// which ends the call.
		return operators.ElicitResponse{ElicitationID: r.ElicitationID, Action: events.ElicitCancel}, fmt.Errorf("nodes: elicitation %s: %w", r.ElicitationID, err)
	}
	action := string(resp.Action)
	if err != nil && action == "" {
		action = string(events.ElicitCancel)
	}
	if resp.Expired != nil {
		_ = emit(m.call.Context, resp.Expired)
	}
	_ = emit(m.call.Context, &events.ElicitationResponse{ElicitationID: r.ElicitationID, Action: action})
	if err != nil {
		return resp, fmt.Errorf("nodes: elicitation %s: %w", r.ElicitationID, err)
	}
	resp.ElicitationID = r.ElicitationID
	return resp, nil
}

// parkedOn returns the question that parked the run, if any.
func (m *messenger) parkedOn() *events.Pending {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parked
}

// shown returns what the tool showed the user directly: its direct
// responses and, as one text response, what it streamed.
func (m *messenger) shown() []DirectResponse {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.direct
	if m.streamed.Len() > 0 {
		out = append(out, DirectResponse{ToolCallID: m.call.toolCallID, Content: m.streamed.String(), ContentType: string(operators.OutputText)})
	}
	return out
}
