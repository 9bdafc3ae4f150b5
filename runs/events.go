package runs

import (
	"time"

	"github.com/trellis-ai/trellis/events"
)

// envelope returns the event's data line without seq, which the store
// adds: {"run_id","conversation_id","ts", then the agent's fields}.
func (rn *Run) envelope(p events.Payload) ([]byte, error) { return rn.envelopeOf(p, "") }

// envelopeOf is envelope for an event of the sub-agent at namespace (""
// for the root agent), which it names in its "namespace" field.
func (rn *Run) envelopeOf(p events.Payload, namespace string) ([]byte, error) {
	b := make([]byte, 0, len(rn.prefix)+len(tsLayout)+1)
	b = append(b, rn.prefix...)
	b = time.Now().UTC().AppendFormat(b, tsLayout)
	b = append(b, '"')
	open := len(b)
	b, err := events.Event{Type: p.EventType(), Data: p, Namespace: namespace}.AppendJSON(b)
	if err != nil {
		return nil, err
	}
	b[open] = ',' // the event's own "{" goes: its fields follow the envelope's
	return b, nil
}

// tsLayout is the layout of an event's "ts".
const tsLayout = "2006-01-02T15:04:05.000Z07:00"

// sanitize keeps internal failures' details in the log: the client reads
// the code and a message that names the run.
func sanitize(f *events.RunFailed, runID string) *events.RunFailed {
	if f.Error.Code != events.CodeInternal {
		return f
	}
	return &events.RunFailed{Error: events.ErrorInfo{Code: events.CodeInternal, Message: "internal error; the server logged it under run " + runID}}
}
