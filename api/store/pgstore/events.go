package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
)

// appendEvent takes the run's next sequence number and stores the event
// under it in one statement, one round trip. The UPDATE locks the run's
// row until the statement commits, so appenders to one run, in any
// process, queue there and each gets the next number; if the insert
// fails the number is given back with it. The data is built here, around
// the number: storeutil.EventPrefix || seq || tail.
const appendEvent = `
WITH r AS (UPDATE runs SET last_seq = last_seq + 1 WHERE id = $1 RETURNING id, last_seq)
INSERT INTO events (run_id, seq, type, data, created_at)
SELECT id, last_seq, $2, '` + storeutil.EventPrefix + `' || last_seq || $3::text, $4 FROM r
RETURNING seq`

// AppendEvent implements store.Events.
func (s *Store) AppendEvent(ctx context.Context, ne store.NewEvent) (store.Event, error) {
	if err := ne.Validate(); err != nil {
		return store.Event{}, fmt.Errorf("pgstore: append event: %w", err)
	}
	tail := storeutil.EventTail(ne.Data)
	e := store.Event{RunID: ne.RunID, Type: ne.Type, CreatedAt: storeutil.Now()}
	err := s.pool.QueryRow(ctx, appendEvent, ne.RunID, ne.Type, tail, e.CreatedAt).Scan(&e.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Event{}, fmt.Errorf("pgstore: append %s event to run %s: %w", ne.Type, ne.RunID, err)
	}
	e.Data = storeutil.EventData(e.Seq, tail)
	return e, nil
}

// EventsAfter implements store.Events. The run comes back even without
// events, which tells an unknown run from a quiet one in one query.
func (s *Store) EventsAfter(ctx context.Context, userID, runID string, afterSeq int64) ([]store.Event, error) {
	rows, err := s.pool.Query(ctx, `SELECT r.id, e.seq, e.type, e.data, e.created_at
FROM runs r LEFT JOIN events e ON e.run_id = r.id AND e.seq > $1
WHERE r.id = $2 AND r.user_id = $3 ORDER BY e.seq`, afterSeq, runID, userID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: events of run %s: %w", runID, err)
	}
	var (
		out   = []store.Event{}
		found bool
		e     store.Event
		seq   *int64
		typ   *string
		data  *string
		at    *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&e.RunID, &seq, &typ, &data, &at}, func() error {
		found = true
		if seq != nil { // else the run, without events
			out = append(out, store.Event{RunID: e.RunID, Seq: *seq, Type: *typ, Data: []byte(*data), CreatedAt: at.UTC()})
		}
		return nil
	})
	if err == nil && !found {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: events of run %s: %w", runID, err)
	}
	return out, nil
}
