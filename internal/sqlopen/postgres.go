package sqlopen

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Postgres makes a pool on dsn, a URL or keyword/value string as
// pgxpool.ParseConfig takes, and returns what newStore makes of it; the
// store owns the pool from then on. If newStore fails, the pool is
// closed.
func Postgres[T any](ctx context.Context, dsn string, newStore func(context.Context, *pgxpool.Pool) (T, error)) (T, error) {
	var zero T
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return zero, fmt.Errorf("pool: %w", err)
	}
	v, err := newStore(ctx, pool)
	if err != nil {
		pool.Close()
		return zero, err
	}
	return v, nil
}
