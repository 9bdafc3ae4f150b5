package sqlstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// A row of the events table holds a batch: consecutive events of a run
// that one AppendEvents or EndRun stored together, so that a turn costs a
// row per flush rather than one per event. Its seq is the number of its
// last event, first_seq that of its first (NULL on the rows written
// before migrations 0031 and 0034, each of which holds one event), type
// the events' types and data their data, each joined by EventSep, which
// neither may hold (store.NewEvent.Validate). Keyed by its last event, a
// row is found by EventsAfter from any number at the primary key, and
// the events a webhook may take end their row (see RowEnds), so that a
// delivery's (run_id, seq) names the row holding its event, last.
const EventSep = "\n"

// InsertEventRow stores one row of events (see EventSep).
const InsertEventRow = `INSERT INTO events (run_id, seq, first_seq, type, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`

// rowsThrough bounds a scan of the rows of events e of run r to the rows
// that can hold the events numbered up to a bound, its two arguments
// (the bound twice): those that end before it and the first that
// reaches it. As a range on the primary key it stops the scan there,
// where a limit on rows let a page of n events read n rows of up to
// RowEvents events each.
const rowsThrough = `e.seq <= coalesce((SELECT min(x.seq) FROM events x WHERE x.run_id = r.id AND x.seq >= ?), ?)`

// A row holds at most RowEvents events and, past its first, RowBytes of
// data, so that a reader whose page begins or ends inside a row reads
// little it drops, and holds one row at most beside its page: a run that
// stored thousands of events at once is read back as a page of them, not
// as all of them a page at a time.
const (
	RowEvents = 64
	RowBytes  = 64 << 10
)

// RowEnds returns, for each of evs in turn, the index of the row of the
// batch it is stored in (tails are what follows each one's number): a
// row ends after each event a webhook may take, before RowEvents or
// RowBytes would be passed, and after the last.
func RowEnds(evs []store.Event, tails []string) []int64 {
	rows := make([]int64, len(evs))
	row, n, size := int64(0), 0, 0
	for i, e := range evs {
		if n > 0 && (n == RowEvents || size+len(tails[i]) > RowBytes) {
			row, n, size = row+1, 0, 0
		}
		rows[i] = row
		n, size = n+1, size+len(tails[i])
		if store.WebhookType(e.Type) {
			row, n, size = row+1, 0, 0
		}
	}
	return rows
}

// EventRow returns the row's columns of evs, numbered, oldest first.
func EventRow(evs []store.Event) (first, last int64, types, data string) {
	// Sized first: a turn's row runs to kilobytes, which growing by
	// doubling allocated about twice over.
	nt, nd := (len(evs)-1)*len(EventSep), (len(evs)-1)*len(EventSep)
	for _, e := range evs {
		nt, nd = nt+len(e.Type), nd+len(e.Data)
	}
	var t, d strings.Builder
	t.Grow(nt)
	d.Grow(nd)
	for i, e := range evs {
		if i > 0 {
			t.WriteString(EventSep)
			d.WriteString(EventSep)
		}
		t.WriteString(e.Type)
		d.Write(e.Data)
	}
	return evs[0].Seq, evs[len(evs)-1].Seq, t.String(), d.String()
}

// InsertEventRows stores evs, numbered, as the rows RowEnds makes of them.
// The rows may be held for q's next statement or its commit (execLater):
// nothing reads them back in the transaction.
func InsertEventRows(ctx context.Context, q Querier, evs []store.Event, tails []string, at any) error {
	ends := RowEnds(evs, tails)
	for start := 0; start < len(evs); {
		end := start + 1
		for end < len(evs) && ends[end] == ends[start] {
			end++
		}
		first, last, types, data := EventRow(evs[start:end])
		if err := execLater(ctx, q, InsertEventRow, evs[start].RunID, last, first, types, data, at); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// eventRow is one row of the events table as read.
type eventRow struct {
	runID   string
	seq     int64
	types   string
	data    []byte
	created time.Time
}

// scanEventRow reads run_id, seq, type, data, created_at.
func scanEventRow(row Row) (eventRow, error) {
	var (
		r       eventRow
		created dbTime
	)
	err := row.Scan(&r.runID, &r.seq, &r.types, &r.data, &created)
	r.created = created.t
	return r, err
}

// events returns the events the row holds, oldest first. Each one's
// number is the one its data begins with (storeutil.EventPrefix); the
// last's must be the row's.
func (r eventRow) events() ([]store.Event, error) {
	if !strings.Contains(r.types, EventSep) {
		return []store.Event{{RunID: r.runID, Seq: r.seq, Type: r.types, Data: r.data, CreatedAt: r.created}}, nil
	}
	types := strings.Split(r.types, EventSep)
	lines := bytes.Split(r.data, []byte(EventSep))
	if len(types) != len(lines) {
		return nil, fmt.Errorf("events of run %s up to %d: %d types for %d events", r.runID, r.seq, len(types), len(lines))
	}
	out := make([]store.Event, len(lines))
	for i, line := range lines {
		seq, err := lineSeq(line)
		if err != nil {
			return nil, fmt.Errorf("events of run %s up to %d: %w", r.runID, r.seq, err)
		}
		out[i] = store.Event{RunID: r.runID, Seq: seq, Type: types[i], Data: line, CreatedAt: r.created}
	}
	if last := out[len(out)-1].Seq; last != r.seq {
		return nil, fmt.Errorf("events of run %s up to %d: the last is numbered %d", r.runID, r.seq, last)
	}
	return out, nil
}

// lineSeq reads the number a stored event's data begins with.
func lineSeq(line []byte) (int64, error) {
	rest, ok := bytes.CutPrefix(line, []byte(storeutil.EventPrefix))
	end := bytes.IndexAny(rest, ",}")
	if !ok || end < 0 {
		return 0, fmt.Errorf("stored event %.40q does not begin with its number", line)
	}
	seq, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stored event %.40q: its number: %w", line, err)
	}
	return seq, nil
}

// eachEvent calls fn with each event of the rows of events (run_id, seq,
// type, data, created_at), in order, until fn returns false. It closes
// rows.
func eachEvent(rows Rows, fn func(store.Event) bool) error {
	defer rows.Close()
	for rows.Next() {
		r, err := scanEventRow(rows)
		if err != nil {
			return err
		}
		evs, err := r.events()
		if err != nil {
			return err
		}
		for _, e := range evs {
			if !fn(e) {
				return nil
			}
		}
	}
	return rows.Err()
}
