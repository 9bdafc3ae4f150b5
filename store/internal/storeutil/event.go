package storeutil

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/trellis-ai/trellis/store"
)

// EventPrefix and EventTail(data) surround a sequence number to make the
// stored data of an event: EventPrefix + seq + EventTail(data) is data
// with "seq":seq as its first member. The backends concatenate them in
// SQL, in the statement that assigns seq.
const EventPrefix = `{"seq":`

// EventTail returns what follows the sequence number. data must be a JSON
// object (store.NewEvent.Validate); surrounding space is dropped.
func EventTail(data []byte) string {
	data = bytes.TrimSpace(data)
	rest := bytes.TrimLeft(data[1:], " \t")
	if len(rest) > 0 && rest[0] == '}' {
		return "}"
	}
	return "," + string(rest)
}

// EventData returns the stored data of an event, as the SQL makes it.
func EventData(seq int64, tail string) []byte {
	b := make([]byte, 0, len(EventPrefix)+20+len(tail))
	b = append(b, EventPrefix...)
	b = strconv.AppendInt(b, seq, 10)
	return append(b, tail...)
}

// Batch checks the events of one AppendEvents call and returns their
// run, their owner (see NewEvent.Owner) and their tails (see EventTail).
func Batch(evs []store.NewEvent) (runID, owner string, tails []string, err error) {
	if len(evs) == 0 {
		return "", "", nil, fmt.Errorf("%w: no events to append", store.ErrInvalid)
	}
	runID, owner = evs[0].RunID, evs[0].Owner
	tails = make([]string, len(evs))
	for i, e := range evs {
		if err := e.Validate(); err != nil {
			return "", "", nil, err
		}
		if e.RunID != runID || e.Owner != owner {
			return "", "", nil, fmt.Errorf("%w: events of runs %s and %s (owners %q, %q) in one append", store.ErrInvalid, runID, e.RunID, owner, e.Owner)
		}
		tails[i] = EventTail(e.Data)
	}
	if err := CheckIDs(runID); err != nil {
		return "", "", nil, err
	}
	return runID, owner, tails, nil
}
