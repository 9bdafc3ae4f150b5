package runs_test

import (
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// A stored event, read back, is typed by the one vocabulary: the
// service's run.started and the agent's events alike, envelope ignored.
func TestStoredEventsDecodeToTheirPayloads(t *testing.T) {
	started := runs.Event{Event: &store.Event{Type: events.TypeRunStarted,
		Data: []byte(`{"run_id":"r","conversation_id":"c","ts":"2026-01-01T00:00:00.000Z","seq":1,"type":"run.started","request_id":"q"}`)}}
	p, err := started.Typed()
	if rs, ok := p.(*events.RunStarted); err != nil || !ok || rs.RequestID != "q" {
		t.Errorf("run.started decoded as %#v, %v", p, err)
	}
	failed := runs.Event{Event: &store.Event{Type: events.TypeRunFailed,
		Data: []byte(`{"run_id":"r","seq":9,"type":"run.failed","error":{"code":"model_error","message":"m"}}`)}}
	p, err = failed.Typed()
	if f, ok := p.(*events.RunFailed); err != nil || !ok || f.Error.Code != "model_error" {
		t.Errorf("run.failed decoded as %#v, %v", p, err)
	}
	live := &events.ResponseChunk{Content: "x"}
	if p, err := (&runs.Event{Event: &store.Event{Type: events.TypeResponseChunk}, Payload: live}).Typed(); p != live || err != nil {
		t.Errorf("a live event's payload is %#v, %v; want the one published", p, err)
	}
}
