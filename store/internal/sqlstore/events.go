package sqlstore

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// AppendEvent implements store.Events.
func (s *Store) AppendEvent(ctx context.Context, ne store.NewEvent) (store.Event, error) {
	evs, err := s.AppendEvents(ctx, []store.NewEvent{ne})
	if err != nil {
		return store.Event{}, err
	}
	return evs[0], nil
}

// AppendEvents implements store.Events through DB.AppendEvents.
func (s *Store) AppendEvents(ctx context.Context, nes []store.NewEvent) ([]store.Event, error) {
	runID, owner, tails, err := storeutil.Batch(nes)
	if err != nil {
		return nil, s.errorf("append events: %w", err)
	}
	out := newEvents(runID, nes)
	// An event a webhook may take is stored with its deliveries, in one
	// transaction; the others need none (on PostgreSQL, Auto spares the
	// round trips of BEGIN and COMMIT).
	write, webhooks, msgs := s.db.Auto, hasWebhookType(nes), messagesOf(nes)
	if webhooks || len(msgs) > 0 {
		write = s.db.Tx
	}
	err = write(ctx, func(ctx context.Context, q Querier) error {
		// The messages go first: the run is checked with the events,
		// whose append fails, and rolls them back, when it is gone or
		// another owner's.
		if err := s.addMessagesLater(ctx, q, msgs, ""); err != nil {
			return err
		}
		found, err := s.db.AppendEvents(ctx, q, owner, out, tails)
		if err == nil && !found {
			err = RunMissingOr(ctx, q, runID, owner, store.ErrNotFound)
		}
		if err == nil && webhooks {
			err = s.recordDeliveries(ctx, q, out)
		}
		return err
	})
	if err != nil {
		return nil, s.errorf("append %d events (%s first) to run %s: %w", len(nes), nes[0].Type, runID, s.messageGone(err))
	}
	return out, nil
}

// newEvents are the events of nes, to be numbered and stored now.
func newEvents(runID string, nes []store.NewEvent) []store.Event {
	now := storeutil.Now()
	out := make([]store.Event, len(nes))
	for i, ne := range nes {
		out[i] = store.Event{RunID: runID, Type: ne.Type, CreatedAt: now}
	}
	return out
}

// EventsAfter implements store.Events. The run comes back even without
// events, which tells an unknown run from a quiet one in one query. The
// page is a range of the primary key (rowsThrough): a page read reads
// its own rows, not every later one.
func (s *Store) EventsAfter(ctx context.Context, userID, runID string, afterSeq int64, limit int) ([]store.Event, error) {
	if err := storeutil.CheckIDs(userID, runID); err != nil {
		return nil, s.errorf("events of run: %w", err)
	}
	out, err := s.eventsAfter(ctx, userID, runID, afterSeq, limit)
	if err != nil {
		return nil, s.errorf("events of run %s: %w", runID, err)
	}
	return out, nil
}

func (s *Store) eventsAfter(ctx context.Context, userID, runID string, afterSeq int64, limit int) ([]store.Event, error) {
	size, err := store.EventLimit(limit)
	if err != nil {
		return nil, err
	}
	// A run without events is one row of seq 0 (numbers start at 1).
	// The rows through the page's last number hold the page, or as
	// much of it as was kept (compaction leaves gaps), and never
	// nothing while later events are stored.
	through := afterSeq + int64(size)
	if through < afterSeq {
		through = math.MaxInt64
	}
	rows, err := s.db.Query(ctx, `SELECT r.id, coalesce(e.seq, 0), coalesce(e.type, ''), coalesce(e.data, ''), e.created_at
FROM runs r LEFT JOIN events e ON e.run_id = r.id AND e.seq > ? AND `+rowsThrough+`
WHERE r.id = ? AND r.user_id = ? ORDER BY e.seq`, afterSeq, through, through, runID, userID)
	if err != nil {
		return nil, err
	}
	var (
		found bool
		page  store.Budget
	)
	out := []store.Event{}
	err = eachEvent(rows, func(e store.Event) bool {
		found = true
		switch {
		case e.Seq == 0: // the run, without events after afterSeq
			return true
		case e.Seq <= afterSeq: // read with the row of the first after it
			return true
		case len(out) == size || !page.Take(len(e.Data)):
			return false
		}
		out = append(out, e)
		return true
	})
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, store.ErrNotFound
	}
	return out, nil
}

// CompactEvents implements store.Events.
func (s *Store) CompactEvents(ctx context.Context, before time.Time, limit int) (int, int, error) {
	if limit <= 0 {
		return 0, 0, s.errorf("compact events: %w: limit %d is not positive", store.ErrInvalid, limit)
	}
	runs, deleted := 0, 0
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		ids, err := queryAll(ctx, q, scanString, `SELECT id FROM runs
WHERE NOT compacted AND status IN ('completed', 'failed', 'cancelled') AND completed_at < ?
ORDER BY completed_at LIMIT ?`, s.db.Time(before), limit)
		if err != nil {
			return err
		}
		runs, deleted = 0, 0
		for _, id := range ids {
			n, err := s.compactRun(ctx, q, id)
			if err != nil {
				return err
			}
			if _, err := q.Exec(ctx, `UPDATE runs SET compacted = true WHERE id = ?`, id); err != nil {
				return err
			}
			runs, deleted = runs+1, deleted+n
		}
		return nil
	})
	if err != nil {
		return 0, 0, s.errorf("compact events of runs ended before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	return runs, deleted, nil
}

// compactRows is how many rows of events compactRun holds at once.
const compactRows = 64

// compactRun keeps, of the run's events, those of store.CompactedKeeps
// and those a webhook delivery still has to send, and returns how many
// it deleted. A row keeps its kept events; one whose last event goes is
// stored anew under the last it keeps (or goes whole), and takes the
// deliveries already sent of its last event with it, as the event's
// deletion always did.
func (s *Store) compactRun(ctx context.Context, q Querier, runID string) (int, error) {
	keep := strings.Repeat("?, ", len(store.CompactedKeeps)-1) + "?"
	deleted, after := 0, int64(0)
	for {
		args := []any{runID, after}
		for _, t := range store.CompactedKeeps {
			args = append(args, t)
		}
		type pendingRow struct {
			eventRow
			pending bool
		}
		// A row of several events has a type none of CompactedKeeps is.
		batch, err := queryAll(ctx, q, func(row Row) (pendingRow, error) {
			var (
				r       pendingRow
				created dbTime
			)
			err := row.Scan(&r.runID, &r.seq, &r.types, &r.data, &created, &r.pending)
			r.created = created.t
			return r, err
		}, `SELECT e.run_id, e.seq, e.type, e.data, e.created_at,
  EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.run_id = e.run_id AND d.seq = e.seq AND d.status = 'pending')
FROM events e WHERE e.run_id = ? AND e.seq > ? AND e.type NOT IN (`+keep+`) ORDER BY e.seq LIMIT ?`, append(args, compactRows)...)
		if err != nil {
			return 0, err
		}
		for _, r := range batch {
			evs, err := r.events()
			if err != nil {
				return 0, err
			}
			var kept []store.Event
			for i, e := range evs {
				if slices.Contains(store.CompactedKeeps, e.Type) || (r.pending && i == len(evs)-1) {
					kept = append(kept, e)
				}
			}
			if len(kept) == len(evs) {
				continue
			}
			deleted += len(evs) - len(kept)
			if len(kept) > 0 && kept[len(kept)-1].Seq == r.seq {
				first, _, types, data := EventRow(kept)
				_, err = q.Exec(ctx, `UPDATE events SET first_seq = ?, type = ?, data = ? WHERE run_id = ? AND seq = ?`, first, types, data, runID, r.seq)
			} else {
				_, err = q.Exec(ctx, `DELETE FROM events WHERE run_id = ? AND seq = ?`, runID, r.seq)
				if err == nil && len(kept) > 0 {
					first, last, types, data := EventRow(kept)
					_, err = q.Exec(ctx, InsertEventRow, runID, last, first, types, data, s.db.Time(r.created))
				}
			}
			if err != nil {
				return 0, err
			}
		}
		if len(batch) < compactRows {
			return deleted, nil
		}
		after = batch[len(batch)-1].seq
	}
}
