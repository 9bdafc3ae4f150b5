package pgstore

import (
	"context"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/sqlstore"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// appendEvents takes the run's next sequence numbers, one per event, and
// stores the events under them in one statement, one round trip, as the
// rows $6 groups them in (sqlstore.RowEnds, sqlstore.EventSep). The
// UPDATE locks the run's row until the statement commits, so appenders to
// one run, in any process, queue there and each gets numbers of its own;
// if the insert fails the numbers are given back with it. The data is
// built here, around each number: storeutil.EventPrefix || seq || tail.
const appendEvents = `
WITH r AS (UPDATE runs SET last_seq = last_seq + cardinality($2::text[])
           WHERE id = $1 AND ($5 = '' OR owner = $5) RETURNING id, last_seq),
e AS (SELECT r.id, r.last_seq - cardinality($2::text[]) + t.ord AS seq, t.type, t.tail, t.grp
      FROM r, unnest($2::text[], $3::text[], $6::int8[]) WITH ORDINALITY AS t(type, tail, grp, ord)),
ins AS (INSERT INTO events (run_id, seq, first_seq, type, data, created_at)
        SELECT id, max(seq), min(seq), string_agg(type, E'\n' ORDER BY seq),
               string_agg('` + storeutil.EventPrefix + `' || seq || tail, E'\n' ORDER BY seq), $4
        FROM e GROUP BY id, grp
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
	err := q.QueryRow(ctx, appendEvents, evs[0].RunID, types, tails, evs[0].CreatedAt, owner, sqlstore.RowEnds(evs, tails)).Scan(&last)
	if err != nil || last == nil {
		return false, err
	}
	sqlstore.Number(evs, *last, tails)
	return true, nil
}
