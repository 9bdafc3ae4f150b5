package sqlmigrate_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	_ "modernc.org/sqlite"

	"github.com/trellis-ai/trellis/internal/sqlmigrate"
)

func TestLoad(t *testing.T) {
	ms, err := sqlmigrate.Load(fstest.MapFS{
		"0010_later.sql": {Data: []byte("B")},
		"0002_first.sql": {Data: []byte("A")},
		"README.md":      {Data: []byte("ignored")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Version != 2 || ms[0].SQL != "A" || ms[1].Version != 10 || ms[1].Name != "0010_later.sql" {
		t.Errorf("Load = %+v, want 0002 then 0010 (numeric order)", ms)
	}

	for name, fsys := range map[string]fstest.MapFS{
		"no number":         {"init.sql": {}},
		"zero":              {"0000_init.sql": {}},
		"duplicate version": {"0001_a.sql": {}, "01_b.sql": {}},
	} {
		if _, err := sqlmigrate.Load(fsys); err == nil {
			t.Errorf("Load with %s succeeded, want an error", name)
		}
	}
}

// sqlTx adapts database/sql, as the SQLite checkpoint saver does.
type sqlTx struct{ tx *sql.Tx }

func (s sqlTx) Exec(ctx context.Context, q string) error {
	_, err := s.tx.ExecContext(ctx, q)
	return err
}

func (s sqlTx) Ints(ctx context.Context, q string) ([]int, error) {
	rows, err := s.tx.QueryContext(ctx, q)
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

func apply(t *testing.T, db *sql.DB, ms ...sqlmigrate.Migration) error {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := sqlmigrate.Apply(t.Context(), sqlTx{tx}, "migrations", ms); err != nil {
		return err
	}
	return tx.Commit()
}

func TestApply(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v1 := sqlmigrate.Migration{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (a int); INSERT INTO t VALUES (1);"}
	v2 := sqlmigrate.Migration{Version: 2, Name: "0002_t.sql", SQL: "INSERT INTO t VALUES (2);"}
	bad := sqlmigrate.Migration{Version: 3, Name: "0003_bad.sql", SQL: "INSERT INTO t VALUES (3); NOT SQL;"}

	if err := apply(t, db, v1); err != nil {
		t.Fatalf("first Apply: %v", err)
	}
	// v1 is recorded, so only v2 runs; running v1 again would fail on
	// CREATE TABLE.
	if err := apply(t, db, v1, v2); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if err := apply(t, db, v1, v2, bad); err == nil || !strings.Contains(err.Error(), "0003_bad.sql") {
		t.Errorf("Apply of a broken migration = %v, want an error naming it", err)
	}
	var sum int
	if err := db.QueryRow("SELECT sum(a) FROM t").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != 3 {
		t.Errorf("rows sum to %d, want 3: each migration once, the broken one rolled back", sum)
	}
	if err := apply(t, db, v1); err == nil {
		t.Error("Apply without a recorded version succeeded; a binary older than the schema must refuse it")
	}
}
