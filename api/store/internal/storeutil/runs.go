package storeutil

import "github.com/trellis-ai/trellis/api/store"

// WithEvents pairs runs with their events. Both come ordered by run, and
// the events within a run by seq.
func WithEvents(runs []store.Run, events []store.Event) []store.RunWithEvents {
	out := make([]store.RunWithEvents, len(runs))
	byRun := make(map[string]int, len(runs))
	for i, r := range runs {
		out[i] = store.RunWithEvents{Run: r, Events: []store.Event{}}
		byRun[r.ID] = i
	}
	for _, e := range events {
		if i, ok := byRun[e.RunID]; ok {
			out[i].Events = append(out[i].Events, e)
		}
	}
	return out
}
