package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
)

// appendEvents takes the run's next sequence numbers, one per event, and
// stores the events under them in one statement, one round trip. The
// UPDATE locks the run's row until the statement commits, so appenders to
// one run, in any process, queue there and each gets numbers of its own;
// if the insert fails the numbers are given back with it. The data is
// built here, around each number: storeutil.EventPrefix || seq || tail.
const appendEvents = `
WITH r AS (UPDATE runs SET last_seq = last_seq + cardinality($2::text[])
           WHERE id = $1 AND ($5 = '' OR owner = $5) RETURNING id, last_seq),
e AS (SELECT r.id, r.last_seq - cardinality($2::text[]) + t.ord AS seq, t.type, t.tail
      FROM r, unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(type, tail, ord)),
ins AS (INSERT INTO events (run_id, seq, type, data, created_at)
        SELECT id, seq, type, '` + storeutil.EventPrefix + `' || seq || tail, $4 FROM e
        RETURNING seq)
SELECT max(seq) FROM ins`

// AppendEvent implements store.Events.
func (s *Store) AppendEvent(ctx context.Context, ne store.NewEvent) (store.Event, error) {
	evs, err := s.AppendEvents(ctx, []store.NewEvent{ne})
	if err != nil {
		return store.Event{}, err
	}
	return evs[0], nil
}

// AppendEvents implements store.Events.
func (s *Store) AppendEvents(ctx context.Context, nes []store.NewEvent) ([]store.Event, error) {
	runID, owner, tails, err := storeutil.Batch(nes)
	if err != nil {
		return nil, fmt.Errorf("pgstore: append events: %w", err)
	}
	types := make([]string, len(nes))
	for i, ne := range nes {
		types[i] = ne.Type
	}
	now := storeutil.Now()
	var last *int64 // NULL when the run is unknown: nothing was inserted
	err = s.pool.QueryRow(ctx, appendEvents, runID, types, tails, now, owner).Scan(&last)
	if err == nil && last == nil {
		err = runMissingOr(ctx, s.pool, runID, owner, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: append %d events (%s first) to run %s: %w", len(nes), nes[0].Type, runID, err)
	}
	out := make([]store.Event, len(nes))
	for i, ne := range nes {
		seq := *last - int64(len(nes)-1-i)
		out[i] = store.Event{RunID: runID, Seq: seq, Type: ne.Type, Data: storeutil.EventData(seq, tails[i]), CreatedAt: now}
	}
	return out, nil
}

// EventsAfter implements store.Events. The run comes back even without
// events, which tells an unknown run from a quiet one in one query. The
// page is cut inside the subquery, which reads the primary key from
// afterSeq on and stops at the limit; with the limit outside the join,
// the database reads and sorts every later event for each page.
func (s *Store) EventsAfter(ctx context.Context, userID, runID string, afterSeq int64, limit int) ([]store.Event, error) {
	if err := storeutil.CheckIDs(userID, runID); err != nil {
		return nil, fmt.Errorf("pgstore: events of run: %w", err)
	}
	size, err := store.EventLimit(limit)
	if err != nil {
		return nil, fmt.Errorf("pgstore: events of run %s: %w", runID, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT r.id, e.seq, e.type, e.data, e.created_at
FROM runs r LEFT JOIN (SELECT seq, type, data, created_at FROM events WHERE run_id = $2 AND seq > $1 ORDER BY seq LIMIT $4) e ON true
WHERE r.id = $2 AND r.user_id = $3 ORDER BY e.seq`, afterSeq, runID, userID, size)
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
