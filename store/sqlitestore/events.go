package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/sqlstore"
)

// appendSeq takes the next n sequence numbers of a run and returns the
// last. The write lock, held until commit, keeps any other writer from
// taking the same ones.
const appendSeq = `UPDATE runs SET last_seq = last_seq + ? WHERE id = ? AND (? = '' OR owner = ?) RETURNING last_seq`

// AppendEvents implements sqlstore.DB: a statement per row of events
// (sqlstore.EventSep), each prepared once per connection
// (internal/sqlopen), in the caller's transaction of the group commit.
func (d *db) AppendEvents(ctx context.Context, q sqlstore.Querier, owner string, evs []store.Event, tails []string) (bool, error) {
	var last int64
	err := q.QueryRow(ctx, appendSeq, len(evs), evs[0].RunID, owner, owner).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	sqlstore.Number(evs, last, tails)
	return true, sqlstore.InsertEventRows(ctx, q, evs, tails, d.Time(evs[0].CreatedAt))
}
