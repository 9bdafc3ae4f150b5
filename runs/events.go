package runs

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/trellis-ai/trellis/nodes"
)

// envelope returns the event's data line without seq, which the store
// adds: {"run_id","conversation_id","ts", then the agent's fields}.
func (rn *Run) envelope(p nodes.Payload) ([]byte, error) { return rn.envelopeOf(p, "") }

// envelopeOf is envelope for an event of the sub-agent at namespace (""
// for the root agent), which it names in its "namespace" field.
func (rn *Run) envelopeOf(p nodes.Payload, namespace string) ([]byte, error) {
	body, err := json.Marshal(nodes.Event{Type: p.EventType(), Data: p, Namespace: namespace})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(rn.prefix)+len(body)+32)
	b = append(b, rn.prefix...)
	b = time.Now().UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `",`...)
	return append(b, body[1:]...), nil
}

// EventRunStarted is the type of RunStarted.
const EventRunStarted = "run.started"

// RunStarted is run.started, the first event of every run: the service's
// one addition to the agent's vocabulary (package nodes).
type RunStarted struct {
	RequestID string `json:"request_id"`
}

// EventType is run.started.
func (*RunStarted) EventType() string { return EventRunStarted }

// Decode decodes a stored event's data back into its typed payload: the
// service's run.started, or one of the agent's (nodes.DecodeEvent).
func Decode(typ string, data []byte) (nodes.Payload, error) {
	if typ == EventRunStarted {
		p := new(RunStarted)
		if err := json.Unmarshal(data, p); err != nil {
			return p, fmt.Errorf("runs: decode %s event: %w", typ, err)
		}
		return p, nil
	}
	return nodes.DecodeEvent(typ, data)
}

// sanitize keeps internal failures' details in the log: the client reads
// the code and a message that names the run.
func sanitize(f *nodes.RunFailed, runID string) *nodes.RunFailed {
	if f.Error.Code != nodes.CodeInternal {
		return f
	}
	return &nodes.RunFailed{Error: nodes.ErrorInfo{Code: nodes.CodeInternal, Message: "internal error; the server logged it under run " + runID}}
}

// title is a new conversation's title: the first line of its first
// message, at most 80 characters.
func title(msg string) string {
	line := msg
	for i, c := range msg {
		if c == '\n' {
			line = msg[:i]
			break
		}
	}
	if r := []rune(line); len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	return line
}
