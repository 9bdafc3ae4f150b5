package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/sqlstore"
)

const (
	// appendSeq takes the next n sequence numbers of a run and returns
	// the last. The write lock, held until commit, keeps any other writer
	// from taking the same ones.
	appendSeq = `UPDATE runs SET last_seq = last_seq + ? WHERE id = ? AND (? = '' OR owner = ?) RETURNING last_seq`

	insertEvent = `INSERT INTO events (run_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?)`
)

// AppendEvents implements sqlstore.DB: a statement per event, each
// prepared once per connection (internal/sqlopen), in the caller's transaction of the group commit. SQLite
// has no unnest to take them all in one, and in process a statement
// costs no round trip.
func (d *db) AppendEvents(ctx context.Context, q sqlstore.Querier, owner string, evs []store.Event, tails []string) (bool, error) {
	runID := evs[0].RunID
	created := d.Time(evs[0].CreatedAt)
	var last int64
	err := q.QueryRow(ctx, appendSeq, len(evs), runID, owner, owner).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	sqlstore.Number(evs, last, tails)
	for _, e := range evs {
		if _, err := q.Exec(ctx, insertEvent, runID, e.Seq, e.Type, string(e.Data), created); err != nil {
			return false, err
		}
	}
	return true, nil
}
