package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/events"
)

// CompactedKeeps are the event types a compacted run keeps
// (Events.CompactEvents): its start, its answer with its citations, and
// its end, so that its conversation still reads as it was answered and a
// stream of it still opens and ends; the steps, tool calls and chunks
// that led there go.
var CompactedKeeps = []string{
	events.TypeRunStarted,
	events.TypeResponseDone,
	events.TypeRunCompleted,
	events.TypeRunFailed,
	events.TypeRunCancelled,
}

// Event is one stored event of a run: the SSE event with id Seq, name Type
// and data Data.
type Event struct {
	RunID string
	Seq   int64
	Type  string
	// Data is the exact one-line JSON object sent as the SSE data.
	Data      json.RawMessage
	CreatedAt time.Time
}

// MarshalJSON writes Data, the event object the stream sent, so the
// history shows each event as the client saw it.
func (e Event) MarshalJSON() ([]byte, error) {
	if len(e.Data) == 0 {
		return []byte("null"), nil
	}
	return e.Data, nil
}

// Limits of the events one read returns: a page of EventsAfter, or the
// first events of each run of ListRuns. A reader holds one page at a
// time, however long the run.
const (
	DefaultEventLimit = 200
	MaxEventLimit     = 500
)

// EventLimit returns the number of events a read asked for limit returns
// at most: limit, DefaultEventLimit for 0, and MaxEventLimit for more.
// A negative limit is an ErrInvalid error.
func EventLimit(limit int) (int, error) { return size(limit, DefaultEventLimit, MaxEventLimit) }

// NewEvent is what AppendEvent needs.
type NewEvent struct {
	RunID string // required
	Type  string // required: the SSE event name
	// Data is the event's JSON object without "seq", on one line:
	// {"type":…,"run_id":…,"conversation_id":…,"ts":…,…}. AppendEvent
	// adds "seq".
	Data json.RawMessage
	// Owner, when set, fences the append: it fails with ErrNotOwner
	// unless the run is owned by Owner, so a process that lost a run to
	// another stops writing to it. The events of one AppendEvents call
	// share one Owner.
	Owner string
	// Message, when set, is stored with the event, before it and in the
	// same transaction: the answer that the event (response.done) shows,
	// so that whoever reads the event finds the message, and neither is
	// stored without the other. It must be of the event's run.
	Message *NewMessage
}

// Validate reports an ErrInvalid error for an event that cannot be stored.
func (e NewEvent) Validate() error {
	switch {
	case e.RunID == "":
		return fmt.Errorf("%w: run id is required", ErrInvalid)
	case e.Type == "":
		return fmt.Errorf("%w: event type is required", ErrInvalid)
	case strings.ContainsAny(e.Type, "\r\n"):
		return fmt.Errorf("%w: event type %q spans several lines", ErrInvalid, e.Type)
	case bytes.ContainsAny(e.Data, "\r\n"):
		return fmt.Errorf("%w: %s event data spans several lines; SSE data must be one line", ErrInvalid, e.Type)
	case !isObject(e.Data):
		return fmt.Errorf("%w: %s event data is not a JSON object", ErrInvalid, e.Type)
	}
	if m := e.Message; m != nil {
		if m.RunID != e.RunID {
			return fmt.Errorf("%w: a %s event of run %s holds a message of run %s", ErrInvalid, e.Type, e.RunID, m.RunID)
		}
		if err := m.Validate(); err != nil {
			return err
		}
	}
	return checkText("event type", e.Type, "owner", e.Owner)
}

// isObject reports whether b is one valid JSON object.
func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && validJSON(b)
}
