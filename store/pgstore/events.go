package pgstore

import (
	"context"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/sqlstore"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
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

// AppendEvents implements sqlstore.DB in one statement, one round trip.
// The statement's placeholders are numbered already, which q's rebinding
// keeps.
func (d *db) AppendEvents(ctx context.Context, q sqlstore.Querier, owner string, evs []store.Event, tails []string) (bool, error) {
	types := make([]string, len(evs))
	for i, e := range evs {
		types[i] = e.Type
	}
	var last *int64 // NULL when the run is unknown: nothing was inserted
	err := q.QueryRow(ctx, appendEvents, evs[0].RunID, types, tails, evs[0].CreatedAt, owner).Scan(&last)
	if err != nil || last == nil {
		return false, err
	}
	sqlstore.Number(evs, *last, tails)
	return true, nil
}
