package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/trellis-ai/trellis/events"
)

// RecordedEvent is one event a [Recorder] saw: its API.md type and its
// JSON payload exactly as the service would send it.
type RecordedEvent struct {
	Type string
	Data json.RawMessage
}

// Recorder is a [Messenger] for tests: it keeps every event in order and
// answers elicitations with Answer. The zero Recorder declines every
// elicitation. Safe for concurrent use.
type Recorder struct {
	// Answer answers an elicitation; nil declines.
	Answer func(ElicitRequest) ElicitResponse

	mu     sync.Mutex
	events []RecordedEvent
	nextID int
}

var _ Messenger = (*Recorder)(nil)

func (r *Recorder) record(typ string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
	}
	r.mu.Lock()
	r.events = append(r.events, RecordedEvent{Type: typ, Data: b})
	r.mu.Unlock()
}

// Events returns a copy of the events so far.
func (r *Recorder) Events() []RecordedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RecordedEvent(nil), r.events...)
}

// Types returns the event types so far, in order.
func (r *Recorder) Types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.events))
	for i, e := range r.events {
		out[i] = e.Type
	}
	return out
}

func (r *Recorder) Progress(_ context.Context, p events.ToolProgress) error {
	r.record(events.TypeToolProgress, p)
	return nil
}

func (r *Recorder) Direct(_ context.Context, d events.DirectResponse) error {
	r.record(events.TypeDirectResponse, d)
	return nil
}

func (r *Recorder) Stream(_ context.Context, c StreamChunk) error {
	r.record(events.TypeResponseChunk, c)
	return nil
}

func (r *Recorder) Elicit(ctx context.Context, req ElicitRequest) (ElicitResponse, error) {
	if req.ElicitationID == "" {
		r.mu.Lock()
		r.nextID++
		req.ElicitationID = fmt.Sprintf("elicit-%d", r.nextID)
		r.mu.Unlock()
	}
	r.record(events.TypeElicitationRequest, req)
	if err := ctx.Err(); err != nil {
		return ElicitResponse{ElicitationID: req.ElicitationID, Action: events.ElicitCancel}, err
	}
	resp := ElicitResponse{Action: events.ElicitDecline}
	if r.Answer != nil {
		resp = r.Answer(req)
	}
	resp.ElicitationID = req.ElicitationID
	r.record(events.TypeElicitationResponse, struct {
		ElicitationID string              `json:"elicitation_id"`
		Action        events.ElicitAction `json:"action"`
	}{req.ElicitationID, resp.Action})
	return resp, nil
}
