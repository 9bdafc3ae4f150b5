package pgtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvDatabase names the variable holding the test database's URL.
const EnvDatabase = "TRELLIS_TEST_DATABASE"

// DefaultDatabase is used when EnvDatabase is unset: the local server that
// development machines run.
const DefaultDatabase = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// New creates an empty schema named t_<random> and returns a pool whose
// connections have it as their search_path. At cleanup the pool is closed
// and the schema dropped with everything in it.
//
// When the database does not answer within two seconds the test is
// skipped, unless the environment variable CI is set: there a missing
// database must fail the build, not pass it silently.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dsn := os.Getenv(EnvDatabase)
	if dsn == "" {
		dsn = DefaultDatabase
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, dsn)
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		if admin != nil {
			admin.Close(context.Background())
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("pgtest: no database at %s=%q: %v", EnvDatabase, dsn, err)
		}
		t.Skipf("pgtest: no database at %s=%q (set CI to fail instead): %v", EnvDatabase, dsn, err)
	}
	defer admin.Close(context.Background())

	schema := fmt.Sprintf("t_%016x", rand.Uint64())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() { dropSchema(t, dsn, schema) })

	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", EnvDatabase, err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	// Registered after dropSchema, so it runs before it: the pool's
	// connections must be gone before the schema can be dropped cleanly.
	t.Cleanup(pool.Close)
	return pool
}

// dropSchema uses a connection of its own because the test's context, and
// the pool, are gone by the time it runs.
func dropSchema(t testing.TB, dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("pgtest: drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", schema, err)
	}
}
