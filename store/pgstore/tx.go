package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trellis-ai/trellis/store/internal/sqlstore"
)

// Transactions whose BEGIN waits for their first statement.
//
// pgx's Begin sends BEGIN and waits for its answer before the first
// statement goes: a round trip that carries nothing. On a loopback
// connection a round trip costs the Go process two system calls and a
// goroutine parked and woken, and a sync turn makes two transactions
// (the run's start and its end), so BEGIN alone was a tenth of the
// turn's round trips. A lazyTx sends BEGIN in one batch with the
// transaction's first statement instead: PostgreSQL runs them in order,
// and an explicit BEGIN opens a transaction block that outlives the
// batch's Sync, so the statements after it run in the same transaction,
// as with pgx.Tx. Which statement is the last is known only when fn
// returns, so COMMIT goes alone unless statements are held.
//
// A statement whose result nobody waits for (querier.Later, which
// sqlstore's execLater calls), or is read only after the next statement
// (querier.LaterRow, for sqlstore's queryRowLater), is held the same
// way, and sent in one batch with the statement after it, or with
// COMMIT: in a batch PostgreSQL runs each statement only if the ones
// before it succeeded, so a held statement's failure fails the
// statement it was sent with, and the transaction.

// inTx runs fn in a transaction begun by begin ("begin", or "begin
// isolation level …"), on a connection of the pool held until the end.
// As pgx.BeginFunc: fn's error, or a panic, rolls the transaction back;
// otherwise it commits, and a commit that PostgreSQL turned into a
// rollback (a statement failed and fn went on) is an error. A fn that
// ran no statement sends nothing at all.
func (d *db) inTx(ctx context.Context, begin string, fn func(pgxQuerier) error) (err error) {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// Release destroys a connection left inside a transaction (a failed
	// rollback, a panic before it), so the server rolls it back.
	defer conn.Release()
	t := &lazyTx{c: conn.Conn(), begin: begin}
	defer func() {
		if p := recover(); p != nil {
			if t.begun {
				t.rollback(ctx)
			}
			panic(p)
		}
		if t.begun && err != nil {
			t.rollback(ctx)
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	if !t.begun && len(t.held) == 0 {
		return nil
	}
	tag, err := t.Exec(ctx, "commit")
	if err != nil {
		return err
	}
	t.begun = false // the transaction is over, committed or not
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// lazyTx is a transaction on c whose BEGIN has not been sent while
// begun is false, with the statements held back to go with the next.
type lazyTx struct {
	c     *pgx.Conn
	begin string
	begun bool
	held  []heldStatement
}

type heldStatement struct {
	sql  string
	args []any
	row  *heldRow // nil for a statement whose only result is its error
}

// heldRow is a held statement's row, read by scan once the statement
// has run.
type heldRow struct {
	scan func(sqlstore.Row) error
	sent bool
	err  error
}

// errHeld is the result of a held row asked for before its statement
// was sent: a bug in the caller, which must send another statement
// first.
var errHeld = errors.New("pgstore: a held statement's row was asked for before the statement was sent")

// result is scan's error, once the statement has run.
func (r *heldRow) result() error {
	if !r.sent {
		return errHeld
	}
	return r.err
}

// read scans the row from the batch's next result. A statement that
// found no row does not fail the batch: the statements after it ran.
func (r *heldRow) read(br pgx.BatchResults) error {
	r.sent = true
	rows, err := br.Query()
	if err != nil {
		rows.Close()
		r.err = err
		return err
	}
	r.err = r.scan(firstRow{rows})
	if errors.Is(r.err, pgx.ErrNoRows) {
		return nil
	}
	return r.err
}

// hold keeps sql to send with the next statement.
func (t *lazyTx) hold(sql string, args []any) {
	t.held = append(t.held, heldStatement{sql: sql, args: args})
}

// holdRow keeps sql, which returns one row at most, to send with the
// next statement; scan reads its row then, and the func returned
// reports scan's error (pgx.ErrNoRows for no row) after that.
func (t *lazyTx) holdRow(sql string, args []any, scan func(sqlstore.Row) error) func() error {
	r := &heldRow{scan: scan}
	t.held = append(t.held, heldStatement{sql: sql, args: args, row: r})
	return r.result
}

var _ pgxQuerier = (*lazyTx)(nil)

// rollback ends the transaction; one that cannot be rolled back is
// closed, as pgx.Tx's Rollback does, so that the pool does not keep it.
func (t *lazyTx) rollback(ctx context.Context) {
	if _, err := t.c.Exec(context.WithoutCancel(ctx), "rollback"); err != nil {
		_ = t.c.Close(context.WithoutCancel(ctx))
	}
}

// queue is the batch of what must go before sql (BEGIN, the held
// statements), then sql.
func (t *lazyTx) queue(sql string, args []any) *pgx.Batch {
	var b pgx.Batch
	if !t.begun {
		b.Queue(t.begin)
	}
	for _, h := range t.held {
		b.Queue(h.sql, h.args...)
	}
	b.Queue(sql, args...)
	return &b
}

// batch sends sql with what must go before it, if anything must, and
// returns the batch with those results read, sql's next; sent is false
// when sql can go alone. err is the error of a statement before sql,
// which sql did not run for.
func (t *lazyTx) batch(ctx context.Context, sql string, args []any) (br pgx.BatchResults, sent bool, err error) {
	if t.begun && len(t.held) == 0 {
		return nil, false, nil
	}
	b := t.queue(sql, args)
	begun, held := t.begun, t.held
	t.begun, t.held = true, nil
	br = t.c.SendBatch(ctx, b)
	fail := func(err error, unread []heldStatement) (pgx.BatchResults, bool, error) {
		for _, h := range unread {
			if h.row != nil {
				h.row.sent, h.row.err = true, err
			}
		}
		_ = br.Close() // reports err again
		return nil, true, err
	}
	if !begun {
		if _, err := br.Exec(); err != nil {
			return fail(err, held)
		}
	}
	for i, h := range held {
		var err error
		if h.row != nil {
			err = h.row.read(br)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			return fail(err, held[i+1:])
		}
	}
	return br, true, nil
}

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br, sent, err := t.batch(ctx, sql, args)
	if !sent {
		return t.c.Exec(ctx, sql, args...)
	}
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br, sent, err := t.batch(ctx, sql, args)
	if !sent {
		return t.c.Query(ctx, sql, args...)
	}
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close() // reports err again
		return nil, err
	}
	return batchRows{rows, br}, nil
}

func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := t.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return firstRow{rows}
}

// batchRows are the rows of a batch's last statement: closing them
// closes the batch, which frees the connection.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r batchRows) Close() {
	r.Rows.Close()
	_ = r.br.Close()
}

// firstRow is pgx's QueryRow over rows: Scan reads the first row, or
// reports pgx.ErrNoRows, and closes them.
type firstRow struct{ rows pgx.Rows }

func (r firstRow) Scan(dest ...any) error {
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
