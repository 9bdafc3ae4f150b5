package sqlmigrate

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one numbered SQL script.
type Migration struct {
	Version int
	Name    string // the file name, for error messages and the record table
	SQL     string
}

// Load reads the migrations in the root of fsys. Each file is named
// NNNN_description.sql; other files are ignored. Versions must be positive
// and unique. The result is sorted by version.
func Load(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("sqlmigrate: read migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || path.Ext(name) != ".sql" {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("sqlmigrate: migration %s: name must start with a positive number and '_'", name)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("sqlmigrate: read migration %s: %w", name, err)
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(body)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return cmp.Compare(a.Version, b.Version) })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("sqlmigrate: migrations %s and %s share version %d", ms[i-1].Name, ms[i].Name, ms[i].Version)
		}
	}
	return ms, nil
}

// Tx is the part of an open transaction that Apply needs. Both methods take
// SQL without arguments, which keeps placeholder syntax out of this package.
type Tx interface {
	// Exec runs one or more statements.
	Exec(ctx context.Context, query string) error
	// Ints runs a query whose single column is an integer.
	Ints(ctx context.Context, query string) ([]int, error)
}

// Apply records applied versions in table, creating it if needed, and runs
// the migrations it has not recorded yet, in version order. It neither begins
// nor commits: run it inside a transaction, so a failing script leaves the
// schema as it was.
//
// A database that records a version missing from ms was migrated by a newer
// binary; Apply refuses it rather than run old code on a schema it does not
// know.
func Apply(ctx context.Context, tx Tx, table string, ms []Migration) error {
	create := "CREATE TABLE IF NOT EXISTS " + table + " (version integer PRIMARY KEY, name text NOT NULL)"
	if err := tx.Exec(ctx, create); err != nil {
		return fmt.Errorf("sqlmigrate: create %s: %w", table, err)
	}
	applied, err := tx.Ints(ctx, "SELECT version FROM "+table)
	if err != nil {
		return fmt.Errorf("sqlmigrate: read %s: %w", table, err)
	}
	for _, v := range applied {
		if !slices.ContainsFunc(ms, func(m Migration) bool { return m.Version == v }) {
			return fmt.Errorf("sqlmigrate: %s records version %d, unknown to this binary", table, v)
		}
	}
	for _, m := range ms {
		if slices.Contains(applied, m.Version) {
			continue
		}
		if err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("sqlmigrate: apply %s: %w", m.Name, err)
		}
		record := fmt.Sprintf("INSERT INTO %s (version, name) VALUES (%d, '%s')",
			table, m.Version, strings.ReplaceAll(m.Name, "'", "''"))
		if err := tx.Exec(ctx, record); err != nil {
			return fmt.Errorf("sqlmigrate: record %s: %w", m.Name, err)
		}
	}
	return nil
}
