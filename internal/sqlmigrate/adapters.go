package sqlmigrate

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
)

// SQL adapts a database/sql transaction (the SQLite backends') to Tx.
func SQL(tx *sql.Tx) Tx { return sqlTx{tx} }

type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) Exec(ctx context.Context, query string) error {
	_, err := t.tx.ExecContext(ctx, query)
	return err
}

func (t sqlTx) Ints(ctx context.Context, query string) ([]int, error) {
	rows, err := t.tx.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Pgx adapts a pgx transaction (the Postgres backends') to Tx. Exec
// without arguments uses the simple protocol, which runs a script of
// several statements.
func Pgx(tx pgx.Tx) Tx { return pgxTx{tx} }

type pgxTx struct{ tx pgx.Tx }

func (t pgxTx) Exec(ctx context.Context, query string) error {
	_, err := t.tx.Exec(ctx, query)
	return err
}

func (t pgxTx) Ints(ctx context.Context, query string) ([]int, error) {
	rows, err := t.tx.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}
