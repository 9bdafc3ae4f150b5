package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
)

const (
	// appendSeq takes the next n sequence numbers of a run and returns
	// the last. The write lock, held until commit, keeps any other writer
	// from taking the same ones.
	appendSeq = `UPDATE runs SET last_seq = last_seq + ? WHERE id = ? AND (? = '' OR owner = ?) RETURNING last_seq`

	insertEvent = `INSERT INTO events (run_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?)`
)

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
		return nil, fmt.Errorf("sqlitestore: append events: %w", err)
	}
	now := storeutil.Now()
	created := formatTime(now)
	out := make([]store.Event, len(nes))
	err = s.write(ctx, func(ctx context.Context, tx *txn) error {
		var last int64
		err := tx.QueryRowContext(ctx, appendSeq, len(nes), runID, owner, owner).Scan(&last)
		if errors.Is(err, sql.ErrNoRows) {
			return runMissingOr(ctx, tx, runID, owner, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		for i, ne := range nes {
			seq := last - int64(len(nes)-1-i)
			out[i] = store.Event{RunID: runID, Seq: seq, Type: ne.Type, Data: storeutil.EventData(seq, tails[i]), CreatedAt: now}
			if _, err := tx.ExecContext(ctx, insertEvent, runID, seq, ne.Type, string(out[i].Data), created); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: append %d events (%s first) to run %s: %w", len(nes), nes[0].Type, runID, err)
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
		return nil, fmt.Errorf("sqlitestore: events of run: %w", err)
	}
	size, err := store.EventLimit(limit)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: events of run %s: %w", runID, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT r.id, e.seq, e.type, e.data, e.created_at
FROM runs r LEFT JOIN (SELECT seq, type, data, created_at FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?) e ON true
WHERE r.id = ? AND r.user_id = ? ORDER BY e.seq`, runID, afterSeq, size, runID, userID)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: events of run %s: %w", runID, err)
	}
	defer rows.Close()
	var (
		out   = []store.Event{}
		found bool
	)
	for rows.Next() {
		found = true
		var (
			e                  store.Event
			seq                sql.NullInt64
			typ, data, created sql.NullString
		)
		if err := rows.Scan(&e.RunID, &seq, &typ, &data, &created); err != nil {
			return nil, fmt.Errorf("sqlitestore: events of run %s: %w", runID, err)
		}
		if !seq.Valid {
			continue // the run, without events
		}
		e.Seq, e.Type, e.Data = seq.Int64, typ.String, []byte(data.String)
		if e.CreatedAt, err = parseTime(created.String); err != nil {
			return nil, fmt.Errorf("sqlitestore: events of run %s: %w", runID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: events of run %s: %w", runID, err)
	}
	if !found {
		return nil, fmt.Errorf("sqlitestore: events of run %s: %w", runID, store.ErrNotFound)
	}
	return out, nil
}
