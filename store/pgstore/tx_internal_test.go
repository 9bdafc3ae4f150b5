package pgstore

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store/internal/sqlstore"
)

// A transaction whose BEGIN waits for its first statement keeps
// pgx.BeginFunc's promises: what fn did commits together or not at all,
// whichever kind of statement came first.
func TestLazyTransactions(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.New(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE items (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	d := &db{pool: pool}
	count := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert := func(q sqlstore.Querier, id int) error {
		_, err := q.Exec(ctx, `INSERT INTO items (id) VALUES (?)`, id)
		return err
	}
	boom := errors.New("boom")

	t.Run("fn's error rolls back", func(t *testing.T) {
		err := d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error {
			if err := insert(q, 1); err != nil {
				return err
			}
			return errors.Join(insert(q, 2), boom)
		})
		if !errors.Is(err, boom) || count() != 0 {
			t.Fatalf("err %v, %d rows: want boom and none", err, count())
		}
	})
	t.Run("commits", func(t *testing.T) {
		for _, first := range []string{"exec", "query", "queryrow"} {
			err := d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error {
				switch first {
				case "query":
					rows, err := q.Query(ctx, `SELECT id FROM items`)
					if err != nil {
						return err
					}
					rows.Close()
				case "queryrow":
					var n int
					if err := q.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&n); err != nil {
						return err
					}
				}
				return insert(q, 10)
			})
			if err != nil || count() != 1 {
				t.Fatalf("%s first: err %v, %d rows: want one", first, err, count())
			}
			if _, err := pool.Exec(ctx, `DELETE FROM items`); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("a failed statement fn went past fails the commit", func(t *testing.T) {
		err := d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error {
			if err := insert(q, 3); err != nil {
				return err
			}
			_ = insert(q, 3) // a duplicate: the transaction is aborted
			return nil
		})
		if !errors.Is(err, pgx.ErrTxCommitRollback) || count() != 0 {
			t.Fatalf("err %v, %d rows: want ErrTxCommitRollback and none", err, count())
		}
	})
	t.Run("the first statement's error is its own", func(t *testing.T) {
		if err := insert(d, 4); err != nil {
			t.Fatal(err)
		}
		err := d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error { return insert(q, 4) })
		if !violates(err, "items_pkey") {
			t.Fatalf("err %v: want the primary key's violation", err)
		}
		var n int
		err = d.Read(ctx, func(q sqlstore.Querier) error {
			return q.QueryRow(ctx, `SELECT id FROM items WHERE id = 5`).Scan(&n)
		})
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatalf("err %v: want no rows", err)
		}
		if _, err := pool.Exec(ctx, `DELETE FROM items`); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a panic rolls back and goes on", func(t *testing.T) {
		func() {
			defer func() {
				if p := recover(); p != boom {
					t.Fatalf("recovered %v, want boom", p)
				}
			}()
			_ = d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error {
				if err := insert(q, 6); err != nil {
					return err
				}
				panic(boom)
			})
		}()
		if count() != 0 {
			t.Fatalf("%d rows after a panic: want none", count())
		}
		if err := d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error { return insert(q, 7) }); err != nil || count() != 1 {
			t.Fatalf("err %v, %d rows after the panic's: want one", err, count())
		}
		if _, err := pool.Exec(ctx, `DELETE FROM items`); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a read keeps one snapshot", func(t *testing.T) {
		var before, after int
		err := d.Read(ctx, func(q sqlstore.Querier) error {
			if err := q.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&before); err != nil {
				return err
			}
			if err := insert(d, 8); err != nil { // another connection commits
				return err
			}
			return q.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&after)
		})
		if err != nil || before != 0 || after != 0 || count() != 1 {
			t.Fatalf("err %v, read %d then %d, %d stored: want 0, 0, 1", err, before, after, count())
		}
		err = d.Read(ctx, func(q sqlstore.Querier) error {
			return insert(q, 9)
		})
		if err == nil {
			t.Fatal("a read-only transaction wrote")
		}
	})
	t.Run("a held statement goes with the next, or with the commit", func(t *testing.T) {
		later := func(q sqlstore.Querier, id int) error {
			return q.(querier).Later(ctx, `INSERT INTO items (id) VALUES (?)`, id)
		}
		if _, err := pool.Exec(ctx, `DELETE FROM items`); err != nil {
			t.Fatal(err)
		}
		var seen int
		err := d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error {
			if err := later(q, 11); err != nil {
				return err
			}
			if err := q.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&seen); err != nil {
				return err
			}
			return later(q, 12) // nothing after it but the commit
		})
		if err != nil || seen != 1 || count() != 2 {
			t.Fatalf("err %v, the next statement saw %d rows, %d stored: want 1 then 2", err, seen, count())
		}
		err = d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error {
			if err := later(q, 13); err != nil {
				return err
			}
			if err := later(q, 11); err != nil { // a duplicate
				return err
			}
			return insert(q, 14)
		})
		if !violates(err, "items_pkey") || count() != 2 {
			t.Fatalf("err %v, %d rows: want the held statement's violation from the next, and the 2 rows before", err, count())
		}
		err = d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error { return later(q, 12) })
		if !violates(err, "items_pkey") || count() != 2 {
			t.Fatalf("err %v, %d rows: want the held statement's violation from the commit, and the 2 rows before", err, count())
		}
		if _, err := pool.Exec(ctx, `DELETE FROM items`); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a held row is read when the next statement goes", func(t *testing.T) {
		if _, err := pool.Exec(ctx, `DELETE FROM items`); err != nil {
			t.Fatal(err)
		}
		insertRow := func(q sqlstore.Querier, id int, got *int) func() error {
			return q.(querier).LaterRow(ctx, `INSERT INTO items (id) VALUES (?) ON CONFLICT DO NOTHING RETURNING id`, []any{id},
				func(r sqlstore.Row) error { return r.Scan(got) })
		}
		var got, seen int
		err := d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error {
			inserted := insertRow(q, 21, &got)
			if err := inserted(); !errors.Is(err, errHeld) {
				t.Errorf("before the next statement: %v, want errHeld", err)
			}
			if err := q.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&seen); err != nil {
				return err
			}
			return inserted()
		})
		if err != nil || got != 21 || seen != 1 || count() != 1 {
			t.Fatalf("err %v, row %d, the next statement saw %d rows, %d stored: want 21, 1, 1", err, got, seen, count())
		}
		// No row is the row's result, not the batch's: the statements
		// after it ran, and the transaction commits.
		err = d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error {
			inserted := insertRow(q, 21, &got)
			if err := insert(q, 22); err != nil {
				return err
			}
			if err := inserted(); !errors.Is(err, pgx.ErrNoRows) {
				t.Errorf("a conflict's row: %v, want pgx.ErrNoRows", err)
			}
			return nil
		})
		if err != nil || count() != 2 {
			t.Fatalf("err %v, %d rows: want 2", err, count())
		}
		// A held row's failure fails the statements sent with it, and
		// is its result too.
		err = d.Tx(ctx, func(ctx context.Context, q sqlstore.Querier) error {
			failed := q.(querier).LaterRow(ctx, `INSERT INTO items (id) VALUES (?) RETURNING id`, []any{21},
				func(r sqlstore.Row) error { return r.Scan(&got) })
			err := insert(q, 23)
			if ferr := failed(); !violates(ferr, "items_pkey") {
				t.Errorf("the held row: %v, want its violation", ferr)
			}
			return err
		})
		if !violates(err, "items_pkey") || count() != 2 {
			t.Fatalf("err %v, %d rows: want the held row's violation from the next, and the 2 rows before", err, count())
		}
		if _, err := pool.Exec(ctx, `DELETE FROM items`); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("nothing to do sends nothing", func(t *testing.T) {
		if err := d.Tx(ctx, func(context.Context, sqlstore.Querier) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := d.Tx(ctx, func(context.Context, sqlstore.Querier) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("err %v, want boom", err)
		}
	})
}
