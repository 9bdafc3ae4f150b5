package pgtest_test

import (
	"context"
	"testing"

	"github.com/trellis-ai/trellis/internal/pgtest"
)

func TestSchemaIsolatedAndDropped(t *testing.T) {
	var schema string
	t.Run("use", func(t *testing.T) {
		pool := pgtest.New(t)
		if err := pool.QueryRow(t.Context(), "SELECT current_schema()").Scan(&schema); err != nil {
			t.Fatal(err)
		}
		if len(schema) < 3 || schema[:2] != "t_" {
			t.Fatalf("current_schema() = %q, want the test's t_ schema", schema)
		}
		// Unqualified names land in the test's schema.
		if _, err := pool.Exec(t.Context(), "CREATE TABLE x (id int)"); err != nil {
			t.Fatal(err)
		}
	})
	if schema == "" {
		t.Skip("no database")
	}

	pool := pgtest.New(t)
	var n int
	err := pool.QueryRow(context.Background(),
		"SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1", schema).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("schema %s still exists after its test's cleanup", schema)
	}
}
