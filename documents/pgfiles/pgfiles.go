package pgfiles

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/internal/sqlmigrate"
	"github.com/trellis-ai/trellis/internal/sqlopen"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationTable records applied versions, named for this package so the
// record's and the checkpoints' migrations live beside it in one schema.
const migrationTable = "document_files_migrations"

// Table is where the objects are, for the start line to say.
const Table = "document_files"

// Storage is documents.Storage in the table document_files. It is safe
// for concurrent use, also by several processes sharing the database.
type Storage struct {
	pool  *pgxpool.Pool
	owned bool // Close closes pool
}

var _ documents.Storage = (*Storage)(nil)

// New migrates the table on pool's search_path and returns the storage
// over it. The caller keeps ownership of pool: Close leaves it open.
func New(ctx context.Context, pool *pgxpool.Pool) (*Storage, error) {
	s, err := newStorage(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("pgfiles: %w", err)
	}
	return s, nil
}

// Open connects to the database at dsn, a URL or keyword/value string as
// pgxpool.ParseConfig takes, and migrates it as New does. The Storage
// owns the pool; Close closes it.
func Open(ctx context.Context, dsn string) (*Storage, error) {
	s, err := sqlopen.Postgres(ctx, dsn, newStorage)
	if err != nil {
		return nil, fmt.Errorf("pgfiles: open: %w", err)
	}
	s.owned = true
	return s, nil
}

func newStorage(ctx context.Context, pool *pgxpool.Pool) (*Storage, error) {
	if _, err := sqlmigrate.Postgres(ctx, pool, "trellis/documents/pgfiles", migrationTable, migrationFS); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return &Storage{pool: pool}, nil
}

// Close closes the pool if Open made it, and does nothing otherwise.
func (s *Storage) Close() {
	if s.owned {
		s.pool.Close()
	}
}

// Put implements documents.Storage. One upsert replaces the row whole,
// so a reader sees the old object or the new one.
func (s *Storage) Put(ctx context.Context, key string, data []byte) error {
	err := documents.CheckKey(key)
	if err == nil && len(data) == 0 {
		err = documents.ErrEmptyObject
	}
	if err == nil {
		_, err = s.pool.Exec(ctx, `INSERT INTO document_files (key, data) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET data = excluded.data`, key, data)
	}
	if err != nil {
		return fmt.Errorf("pgfiles: put %s: %w", key, err)
	}
	return nil
}

// Get implements documents.Storage.
func (s *Storage) Get(ctx context.Context, key string) ([]byte, error) {
	var data []byte
	err := documents.CheckKey(key)
	if err == nil {
		err = s.pool.QueryRow(ctx, `SELECT data FROM document_files WHERE key = $1`, key).Scan(&data)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		err = documents.ErrNotExist
	}
	if err != nil {
		return nil, fmt.Errorf("pgfiles: get %s: %w", key, err)
	}
	return data, nil
}

// Delete implements documents.Storage.
func (s *Storage) Delete(ctx context.Context, key string) error {
	err := documents.CheckKey(key)
	if err == nil {
		_, err = s.pool.Exec(ctx, `DELETE FROM document_files WHERE key = $1`, key)
	}
	if err != nil {
		return fmt.Errorf("pgfiles: delete %s: %w", key, err)
	}
	return nil
}

// likeEscaper escapes LIKE's wildcards: a key's path-escaped parts hold
// '%', and ids may hold '_'. Keys hold no backslash (CheckKey), which is
// LIKE's escape character.
var likeEscaper = strings.NewReplacer(`%`, `\%`, `_`, `\_`)

// List implements documents.Storage.
func (s *Storage) List(ctx context.Context, prefix string) ([]string, error) {
	if err := documents.CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("pgfiles: list %s: %w", prefix, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT key FROM document_files WHERE key LIKE $1 ORDER BY key`, likeEscaper.Replace(prefix)+"%")
	var keys []string
	if err == nil {
		keys, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		return nil, fmt.Errorf("pgfiles: list %s: %w", prefix, err)
	}
	return keys, nil
}
