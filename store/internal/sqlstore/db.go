package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// DB is what a backend gives the shared store: statements with ?
// placeholders, transactions, and the reading of its errors. Statements
// run on DB itself run outside any transaction; the shared store only
// reads that way.
type DB interface {
	Querier

	// Tx runs fn in a writing transaction, committed when fn returns
	// nil, so fn's statements commit together or not at all.
	Tx(ctx context.Context, fn func(ctx context.Context, q Querier) error) error

	// Auto runs fn, whose statements need no transaction together: each
	// may commit alone (PostgreSQL runs them on the pool, sparing the
	// round trips of BEGIN and COMMIT) or with others (SQLite's group
	// commit, through which every write must go).
	Auto(ctx context.Context, fn func(ctx context.Context, q Querier) error) error

	// Read runs fn in a read-only transaction, so its queries read one
	// snapshot.
	Read(ctx context.Context, fn func(q Querier) error) error

	// AppendEvents takes the next len(evs) sequence numbers of the run
	// of evs, if it exists and owner is "" or its owner, and stores evs
	// under them with q, setting each one's Seq and Data (see Number;
	// tails are what follows each number). q is a transaction of Tx,
	// or of Auto: on PostgreSQL it is one statement, which commits
	// alone. It reports found false, and stores nothing, when no run
	// matched. This is where the databases differ most: PostgreSQL
	// does it in one statement (unnest), SQLite a statement per row of
	// events (see EventSep).
	AppendEvents(ctx context.Context, q Querier, owner string, evs []store.Event, tails []string) (found bool, err error)

	// ForUpdate ends a SELECT of a writing transaction so that it locks
	// the rows it reads until the transaction ends, as an UPDATE would:
	// " FOR UPDATE" on PostgreSQL; "" on SQLite, whose writing
	// transaction holds the whole database's write lock from its BEGIN.
	ForUpdate() string

	// Time is t as the database stores it (PostgreSQL: timestamptz;
	// SQLite: FormatTime's text). A call encodes its time once and
	// passes the result to each statement that stores it.
	Time(t time.Time) any

	// Violates reports whether err is a violation of the constraint
	// named as the PostgreSQL schema names it (runs_one_active,
	// approvals_pkey, messages_run_id_fkey …).
	Violates(err error, constraint string) bool

	// ChunkSearch is how the database's full-text index over chunks is
	// asked: the one part of the documents' SQL each writes its own.
	ChunkSearch() ChunkSearch

	// MemorySearch is the same of the full-text index over memories.
	MemorySearch() MemorySearch
}

// MemorySearch is the SQL a backend's full-text index over memories is
// asked with: as ChunkSearch, but From names the memories m, and Args
// makes the arguments of the ?s in From and Match, in order, from the
// words and the user, for an index that can narrow to one user's rows
// itself. SearchMemories adds AND m.user_id = ? after Match.
type MemorySearch struct {
	From, Match, Score string
	Args               func(words []string, userID string) []any
	// Upkeep runs in the transaction of a write that adds a memory's
	// text to the index (AddMemory, UpdateMemory), after it.
	Upkeep Upkeep
}

// Upkeep is a backend's work on its full-text index in the transaction
// of a write that adds to the index, after the write; nil is none.
type Upkeep func(ctx context.Context, q Querier) error

// run runs u, if there is one.
func (u Upkeep) run(ctx context.Context, q Querier) error {
	if u == nil {
		return nil
	}
	return u(ctx, q)
}

// ChunkSearch is the SQL a backend's full-text index over chunks is asked
// with. SearchChunks writes
//
//	SELECT <chunk columns>, <Score> FROM <From> JOIN documents d ON …
//	WHERE <Match> AND <scope> ORDER BY <Score> DESC …
//
// and passes the query argument (Terms of the searched words) as the
// first argument: exactly one ? in From and Match together, in From or
// at the start of Match.
type ChunkSearch struct {
	// From names the chunks as c, joined to the index.
	From string
	// Match restricts the rows to those matching the query.
	Match string
	// Score ranks a row; higher is better.
	Score string
	// Terms makes the query argument from the words searched for: one
	// or more, lower case, letters and digits only.
	Terms func(words []string) string
	// Upkeep runs in the transaction of PutChunks, after the chunks
	// are in.
	Upkeep Upkeep
	// Index, when set, computes the index's entry of a chunk in the
	// client as PutChunks stores it; without it the database does.
	Index *ChunkIndex
}

// ChunkIndex computes the full-text index's entries of chunks in the
// client; PutChunks stores them in Column.
type ChunkIndex struct {
	Column string
	// Compute returns each text's entry, as the driver takes it; where
	// the database must compute the entry itself, the column's empty
	// value. It may ask the database with q, the transaction storing
	// them.
	Compute func(ctx context.Context, q Querier, texts []string) ([]any, error)
}

// Querier runs one statement, written with ? placeholders.
type Querier interface {
	// Exec runs a statement and returns the number of rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow's Scan returns an error matching sql.ErrNoRows when
	// there is no row (pgx.ErrNoRows does).
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// holder is a Querier that can hold a statement back and send it with
// its next statement, or with its commit: pgstore's transactions, where
// that spares a round trip. A held statement's error is the error of
// the statement it was sent with.
type holder interface {
	Later(ctx context.Context, query string, args ...any) error
	// LaterRow holds a statement that returns one row at most; scan
	// reads the row once the statement has run, and the func returned
	// reports scan's error then.
	LaterRow(ctx context.Context, query string, args []any, scan func(Row) error) func() error
}

// execLater runs query with q, now or, when q can hold it, with q's next
// statement: for a statement of a transaction whose only result is its
// error, followed by another that the transaction runs anyway (see
// holder).
func execLater(ctx context.Context, q Querier, query string, args ...any) error {
	if h, ok := q.(holder); ok {
		return h.Later(ctx, query, args...)
	}
	_, err := q.Exec(ctx, query, args...)
	return err
}

// queryRowLater runs query, which returns one row at most, with q, and
// scan reads its row: now, or, when q can hold it, once q's next
// statement has been sent. The func returned reports scan's error (an
// error matching sql.ErrNoRows for no row) and must be called only after
// that next statement. For reads whose result the transaction needs
// only after a statement that does not depend on it.
func queryRowLater(ctx context.Context, q Querier, query string, args []any, scan func(Row) error) func() error {
	if h, ok := q.(holder); ok {
		return h.LaterRow(ctx, query, args, scan)
	}
	err := scan(q.QueryRow(ctx, query, args...))
	return func() error { return err }
}

// Row is one row of a result.
type Row interface{ Scan(dest ...any) error }

// Rows is a result being read; pgx.Rows is one as it is.
type Rows interface {
	Row
	Next() bool
	Err() error
	Close()
}

// TimeFormat is how SQLite stores a time: UTC, fixed width, so times sort
// as text.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// FormatTime is t as SQLite stores it.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// dbTime scans a time column, possibly NULL: a time.Time from PostgreSQL,
// or the text FormatTime made from SQLite.
type dbTime struct {
	t     time.Time
	valid bool
}

func (d *dbTime) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case nil:
		*d = dbTime{}
		return nil
	case time.Time:
		*d = dbTime{t: v.UTC(), valid: true}
		return nil
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return fmt.Errorf("stored time of type %T", src)
	}
	t, err := time.Parse(TimeFormat, s)
	if err != nil {
		return fmt.Errorf("stored time %q: %w", s, err)
	}
	*d = dbTime{t: t.UTC(), valid: true}
	return nil
}

// ptr returns the time, or nil for NULL.
func (d dbTime) ptr() *time.Time {
	if !d.valid {
		return nil
	}
	return &d.t
}

// Number gives evs the numbers up to last, in order, and the data stored
// under them: storeutil.EventData of each number and tail.
func Number(evs []store.Event, last int64, tails []string) {
	for i := range evs {
		seq := last - int64(len(evs)-1-i)
		evs[i].Seq, evs[i].Data = seq, storeutil.EventData(seq, tails[i])
	}
}
