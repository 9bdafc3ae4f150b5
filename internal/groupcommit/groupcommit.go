package groupcommit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// ErrClosed is returned by Do once the Writer is closed.
var ErrClosed = errors.New("groupcommit: writer closed")

// MaxBatch is the most transactions one commit takes: enough to spread a
// commit's cost thin, few enough that a batch does not make the first
// caller in it wait long behind the last.
const MaxBatch = 64

// Writer runs transaction functions on db, batched; see the package doc.
// It is safe for concurrent use.
type Writer struct {
	db   *sql.DB
	ops  chan *op
	quit chan struct{}
	done chan struct{}
	once sync.Once
	// savepoint, release and rollback bracket each transaction of a
	// batch of more than one. Prepared on db, they are parsed once per
	// connection that runs a batch (database/sql keeps them per
	// connection), not once per savepoint.
	savepoint, release, rollback *sql.Stmt
}

type op struct {
	ctx context.Context
	fn  func(context.Context, *sql.Tx) error
	err chan error
}

// New starts a Writer on db. db's connections must begin their
// transactions with BEGIN IMMEDIATE (modernc's _txlock=immediate), so the
// batch takes the write lock at once. Close stops it.
func New(ctx context.Context, db *sql.DB) (*Writer, error) {
	w := &Writer{db: db, ops: make(chan *op), quit: make(chan struct{}), done: make(chan struct{})}
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{{&w.savepoint, "SAVEPOINT groupcommit"}, {&w.release, "RELEASE groupcommit"}, {&w.rollback, "ROLLBACK TO groupcommit"}} {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			w.closeStmts()
			return nil, fmt.Errorf("groupcommit: prepare %q: %w", p.sql, err)
		}
		*p.dst = st
	}
	go w.loop()
	return w, nil
}

// Do runs fn in a transaction and returns once that transaction has
// committed (nil) or failed. fn's own error rolls back fn's writes only,
// and Do returns it as it is; a failed commit fails every function of
// the batch. fn must not keep tx, and may be run with other functions'
// writes before it in the same transaction, so it must not assume an
// empty transaction (it sees everything committed before it, as always).
//
// ctx only bounds the wait for a turn: once fn starts it runs to its end
// under a context without ctx's cancellation, which is the one fn gets.
// Interrupting a statement would roll back the whole shared transaction.
func (w *Writer) Do(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	o := &op{ctx: ctx, fn: fn, err: make(chan error, 1)}
	select {
	case w.ops <- o:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-w.quit:
		return ErrClosed
	}
	return <-o.err
}

// Close stops the Writer once the batch it is running has committed; Do
// fails with ErrClosed from then on. It does not close db.
func (w *Writer) Close() {
	w.once.Do(func() {
		close(w.quit)
		<-w.done
		w.closeStmts()
	})
}

func (w *Writer) closeStmts() {
	for _, st := range []*sql.Stmt{w.savepoint, w.release, w.rollback} {
		if st != nil {
			st.Close()
		}
	}
}

func (w *Writer) loop() {
	defer close(w.done)
	batch := make([]*op, 0, MaxBatch)
	for {
		select {
		case o := <-w.ops:
			batch = append(batch[:0], o)
		case <-w.quit:
			return
		}
		// Take whoever is waiting now; a sender blocked on the
		// unbuffered channel is picked up by the non-blocking receive.
	more:
		for len(batch) < MaxBatch {
			select {
			case o := <-w.ops:
				batch = append(batch, o)
			default:
				break more
			}
		}
		w.run(batch)
		clear(batch)
	}
}

// run commits one batch and reports every result. A function whose
// caller gave up before its turn is not run.
func (w *Writer) run(batch []*op) {
	errs := make([]error, len(batch))
	start := make([]bool, len(batch))
	live := 0
	for i, o := range batch {
		if err := o.ctx.Err(); err != nil {
			errs[i] = context.Cause(o.ctx)
			continue
		}
		start[i] = true
		live++
	}
	if live > 0 {
		if err := w.commit(batch, start, errs, live > 1); err != nil {
			for i := range batch {
				if start[i] && errs[i] == nil {
					errs[i] = err
				}
			}
		}
	}
	for i, o := range batch {
		o.err <- errs[i] // buffered: a caller that left does not block us
	}
}

// commit runs the started functions in one transaction, each in a
// savepoint when there are several, and commits. It records each
// function's own error in errs and returns the error that fails them
// all: begin or commit.
func (w *Writer) commit(batch []*op, start []bool, errs []error, savepoints bool) error {
	// The transaction outlives any one caller, so no caller's context
	// may cancel it.
	bg := context.Background()
	tx, err := w.db.BeginTx(bg, nil)
	if err != nil {
		return fmt.Errorf("groupcommit: begin: %w", err)
	}
	defer tx.Rollback()
	for i, o := range batch {
		if !start[i] {
			continue
		}
		ctx := context.WithoutCancel(o.ctx)
		if !savepoints {
			if errs[i] = o.fn(ctx, tx); errs[i] != nil {
				return errs[i] // its writes go with the rollback, and nothing else is in the batch
			}
			continue
		}
		if _, err := tx.StmtContext(bg, w.savepoint).ExecContext(bg); err != nil {
			return fmt.Errorf("groupcommit: savepoint: %w", err)
		}
		if errs[i] = o.fn(ctx, tx); errs[i] != nil {
			if _, err := tx.StmtContext(bg, w.rollback).ExecContext(bg); err != nil {
				return fmt.Errorf("groupcommit: rollback to savepoint: %w", err)
			}
		}
		if _, err := tx.StmtContext(bg, w.release).ExecContext(bg); err != nil {
			return fmt.Errorf("groupcommit: release savepoint: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("groupcommit: commit: %w", err)
	}
	return nil
}
