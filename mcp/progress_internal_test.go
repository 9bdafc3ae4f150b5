package mcp

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
)

// An update that overtook a newer one on the way is dropped: the call's
// progress never goes back; equal progress (a new message) still comes.
func TestProgressNeverGoesBack(t *testing.T) {
	var rec operators.Recorder
	p := startProgress(t.Context(), operators.Call{ToolCallID: "tc", Messenger: &rec})
	for _, v := range []float64{1, 3, 2, 3, 4} {
		p.push(events.ToolProgress{Progress: v, Total: 4})
	}
	p.finish()
	var got []float64
	for _, e := range rec.Events() {
		var ev events.ToolProgress
		if e.Type != events.TypeToolProgress || json.Unmarshal(e.Data, &ev) != nil {
			t.Fatalf("event %s %s", e.Type, e.Data)
		}
		got = append(got, ev.Progress)
	}
	if want := []float64{1, 3, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
}
