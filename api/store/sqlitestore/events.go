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
	// appendSeq takes the run's next sequence number. The write lock,
	// held until commit, keeps any other writer from taking the same one.
	appendSeq = `UPDATE runs SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq`

	insertEvent = `INSERT INTO events (run_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?)`
)

// AppendEvent implements store.Events.
func (s *Store) AppendEvent(ctx context.Context, ne store.NewEvent) (store.Event, error) {
	if err := ne.Validate(); err != nil {
		return store.Event{}, fmt.Errorf("sqlitestore: append event: %w", err)
	}
	tail := storeutil.EventTail(ne.Data)
	e := store.Event{RunID: ne.RunID, Type: ne.Type, CreatedAt: storeutil.Now()}
	err := s.write(ctx, func(tx *sql.Tx) error {
		err := tx.StmtContext(ctx, s.appendSeq).QueryRowContext(ctx, ne.RunID).Scan(&e.Seq)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		e.Data = storeutil.EventData(e.Seq, tail)
		_, err = tx.StmtContext(ctx, s.insertEvent).ExecContext(ctx, e.RunID, e.Seq, e.Type, string(e.Data), formatTime(e.CreatedAt))
		return err
	})
	if err != nil {
		return store.Event{}, fmt.Errorf("sqlitestore: append %s event to run %s: %w", ne.Type, ne.RunID, err)
	}
	return e, nil
}

// EventsAfter implements store.Events. The run comes back even without
// events, which tells an unknown run from a quiet one in one query.
func (s *Store) EventsAfter(ctx context.Context, userID, runID string, afterSeq int64) ([]store.Event, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT r.id, e.seq, e.type, e.data, e.created_at
FROM runs r LEFT JOIN events e ON e.run_id = r.id AND e.seq > ?
WHERE r.id = ? AND r.user_id = ? ORDER BY e.seq`, afterSeq, runID, userID)
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
