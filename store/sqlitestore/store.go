package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/trellis-ai/trellis/internal/groupcommit"
	"github.com/trellis-ai/trellis/internal/sqlmigrate"
	"github.com/trellis-ai/trellis/internal/sqlopen"
	"github.com/trellis-ai/trellis/store/internal/sqlstore"
)

// Store is a store.Store in one SQLite database file. It is safe for
// concurrent use, also by several processes sharing the file.
type Store struct {
	*shared // the SQL written once for both databases
	db      *db
}

// shared embeds sqlstore.Store without an exported field.
type shared = sqlstore.Store

// migrationFS holds the schema's migrations: SQLite's types (text times,
// integer booleans) make them its own.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// Open opens, or creates, the database at path and brings its schema up to
// date. path is a file name, a "file:" URI, or ":memory:" for a private
// in-memory database that lives until Close. A plain file name must not
// contain '?'.
func Open(ctx context.Context, path string) (*Store, error) {
	s, err := open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	return s, nil
}

func open(ctx context.Context, path string) (*Store, error) {
	sdb, err := sqlopen.SQLite(path)
	if err != nil {
		return nil, err
	}
	latest, err := sqlmigrate.SQLite(ctx, sdb, sqlstore.MigrationTable, migrationFS)
	if err != nil {
		sdb.Close()
		return nil, err
	}
	writer, err := groupcommit.New(ctx, sdb)
	if err != nil {
		sdb.Close()
		return nil, err
	}
	d := &db{db: sdb, writer: writer}
	return &Store{shared: sqlstore.New(d, "sqlitestore", latest), db: d}, nil
}

// TruncateWAL empties the database's write-ahead log into the file (see
// sqlopen.TruncateWAL), so deleted records leave no trace in it.
func (s *Store) TruncateWAL(ctx context.Context) error {
	if err := sqlopen.TruncateWAL(ctx, s.db.db); err != nil {
		return fmt.Errorf("sqlitestore: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.db.writer.Close()
	if err := s.db.db.Close(); err != nil {
		return fmt.Errorf("sqlitestore: close: %w", err)
	}
	return nil
}

// db is sqlstore.DB over database/sql: every write goes through the
// group-commit writer. Statements are prepared once per connection and
// kept by the connection (see sqlopen.CachedStatements).
type db struct {
	db *sql.DB
	// writer runs every writing transaction, several to a commit, so
	// this process's writers queue in Go instead of polling SQLite's
	// lock and share the cost of committing.
	writer *groupcommit.Writer
}

var _ sqlstore.DB = (*db)(nil)

// Tx runs fn in a transaction holding the write lock, shared with other
// writers of this process (see groupcommit.Writer.Do), and returns once
// it committed or failed. fn gets a context that is not cancelled.
func (d *db) Tx(ctx context.Context, fn func(context.Context, sqlstore.Querier) error) error {
	return d.writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return fn(ctx, txn{tx: tx})
	})
}

// Auto is Tx: every write goes through the group-commit writer.
func (d *db) Auto(ctx context.Context, fn func(context.Context, sqlstore.Querier) error) error {
	return d.Tx(ctx, fn)
}

// Read runs fn in a read-only transaction, which begins deferred and takes
// no write lock, so its queries share one snapshot.
func (d *db) Read(ctx context.Context, fn func(sqlstore.Querier) error) error {
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := fn(txn{tx: tx}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (d *db) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return affected(d.db.ExecContext(ctx, query, encode(args)...))
}

func (d *db) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return wrapRows(d.db.QueryContext(ctx, query, encode(args)...))
}

func (d *db) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return d.db.QueryRowContext(ctx, query, encode(args)...)
}

// txn is a transaction as a sqlstore.Querier.
type txn struct{ tx *sql.Tx }

func (t txn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return affected(t.tx.ExecContext(ctx, query, encode(args)...))
}

func (t txn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return wrapRows(t.tx.QueryContext(ctx, query, encode(args)...))
}

func (t txn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return t.tx.QueryRowContext(ctx, query, encode(args)...)
}

// ForUpdate implements sqlstore.DB: the group-commit writer's
// transaction began IMMEDIATE, holding the write lock.
func (d *db) ForUpdate() string { return "" }

// Time implements sqlstore.DB: fixed-width text, which sorts as time
// does.
func (d *db) Time(t time.Time) any { return sqlstore.FormatTime(t) }

// encode stores a time.Time argument as Time does, should one come
// unencoded (the driver's own format would not sort); args is changed in
// place.
func encode(args []any) []any {
	for i, a := range args {
		if t, ok := a.(time.Time); ok {
			args[i] = sqlstore.FormatTime(t)
		}
	}
	return args
}

func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// rows is *sql.Rows as sqlstore.Rows, whose Close reports nothing (Err
// does).
type rows struct{ *sql.Rows }

func (r rows) Close() { r.Rows.Close() }

func wrapRows(r *sql.Rows, err error) (sqlstore.Rows, error) {
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

// uniqueColumns names, for each unique constraint of the PostgreSQL
// schema that sqlstore asks about, the column SQLite's error names
// ("table.column"). SQLite's foreign key errors name no constraint; none
// of those sqlstore asks about can fail here, as every write holds the
// database's write lock from its first statement.
var uniqueColumns = map[string]string{
	"runs_one_active":      "runs.conversation_id",
	"approvals_pkey":       "approvals.id",
	"elicitations_pkey":    "elicitations.id",
	"clarifications_pkey":  "clarifications.id",
	"uncertain_calls_pkey": "uncertain_calls.id",
}

// chunkSearch asks the FTS5 index, ranked by BM25 (which FTS5 scores
// lower for better, hence the minus). The words are quoted, so none is
// read as FTS5 syntax, and any of them matches.
var chunkSearch = sqlstore.ChunkSearch{
	From:   "chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid",
	Match:  "chunks_fts MATCH ?",
	Score:  "-bm25(chunks_fts)",
	Terms:  func(words []string) string { return `"` + strings.Join(words, `" OR "`) + `"` },
	Upkeep: optimizeWhileSmall("chunks_fts", "chunks"),
}

// ChunkSearch implements sqlstore.DB.
func (d *db) ChunkSearch() sqlstore.ChunkSearch { return chunkSearch }

// memorySearch asks the FTS5 index over memories for one user's matches:
// the owner column holds a token of the user id (see migration 0005), so
// FTS5 intersects the user's short list with the words' lists rather than
// score every user's matches; the owner column weighs nothing in BM25, so
// a row scores the same with the owner's token asked for or not.
//
// When the user is the only one with memories (one user in local mode),
// the token is left out: it would match every row, and FTS5 would walk
// the user's whole list for it twice a search, once to intersect and once
// for BM25 to count the rows that hold it. Each of those walks starts
// with a lookup in every segment of the index, and SQLite 3.54 prepares
// FTS5's lookup statement (segid=? AND term<=?) anew whenever the segment
// id it binds goes from 1 to another or back: while planning it, the
// query planner's guess at how often segid=? holds asks whether the
// bound value is -1, 0 or 1, and marks the statement to be planned again
// when a binding crosses that line. So a search prepares it twice a word
// while segment 1 is one of several (a quarter of a search's time in
// BenchmarkSearchMemories). Only SQLITE_DBCONFIG_ENABLE_QPSG turns that
// off, and the driver does not expose sqlite3_db_config. So a small index
// is kept in one segment (optimizeWhileSmall).
//
// The arguments are the words (?1) and the user id (?2); the query's own
// ?s after Match are numbered on from them.
var memorySearch = sqlstore.MemorySearch{
	From:  "memories_fts JOIN memories m ON m.rowid = memories_fts.rowid",
	Match: "memories_fts MATCH iif(" + othersRemembered + ", " + ownerMatch + ", ?1)",
	Score: "-bm25(memories_fts, 1.0, 1.0, 0.0)",
	Args: func(words []string, userID string) []any {
		return []any{chunkSearch.Terms(words), userID}
	},
	Upkeep: optimizeWhileSmall("memories_fts", "memories"),
}

// mergedUpTo is how many rows an FTS5 index's table may hold and the
// index still be merged into one segment on each write: five local
// users' worth of memories at the default MaxMemories, or a dozen
// documents of forty chunks. Merging rewrites the whole index: a rewrite
// of a memory takes about 1.4 times as long at 100 memories and 1.9 times
// at 500 (BenchmarkMemoryRewrite), a document's put 3.6 to 15 times (1.2 to
// 4.9 ms) beside 60 to 480 chunks, where a search takes a quarter to a
// ninth of the time (BenchmarkFewDocuments). A write happens about once a
// conversation or an upload, a search once a turn.
const mergedUpTo = 512

// optimizeWhileSmall is the upkeep of the FTS5 index over content: after
// a write, while content holds at most mergedUpTo rows, FTS5's optimize
// merges the index into one segment, so that no search prepares FTS5's
// lookup again (see memorySearch). FTS5 writes a segment for each
// transaction that changes the index: a memory rewritten by learning, a
// document's chunks. Migration 0027's merging at three segments a level
// still left the memories' index in two segments after one write in two,
// segment 1 among them, and the chunks' index kept one a document. A
// larger index merges as FTS5 does by itself: the rewrite would cost a
// write more than the searches it saves. The count reads at most
// mergedUpTo+1 rows, whatever the table holds. Deletes need no upkeep:
// with secure-delete they take the rows out of the segments that hold
// them and write none.
func optimizeWhileSmall(index, content string) sqlstore.Upkeep {
	query := `INSERT INTO ` + index + ` (` + index + `) SELECT 'optimize'
        WHERE (SELECT count(*) FROM (SELECT 1 FROM ` + content + ` LIMIT ?1)) < ?1`
	return func(ctx context.Context, q sqlstore.Querier) error {
		_, err := q.Exec(ctx, query, mergedUpTo+1)
		return err
	}
}

// ownerMatch is the FTS5 query for the user's rows that hold any of the
// words: the user's owner token, made as migration 0005's triggers make
// it, and the words.
const ownerMatch = `'owner : "u' || hex(?2) || '" AND (' || ?1 || ')'`

// othersRemembered is whether another user than ?2 has memories: two
// lookups in an index on user_id.
const othersRemembered = `(EXISTS (SELECT 1 FROM memories WHERE user_id < ?2) OR EXISTS (SELECT 1 FROM memories WHERE user_id > ?2))`

// MemorySearch implements sqlstore.DB.
func (d *db) MemorySearch() sqlstore.MemorySearch { return memorySearch }

// Violates implements sqlstore.DB. A trigger's RAISE(ABORT, name)
// violates the constraint it names (the schema's triggers name
// erasure_in_progress).
func (d *db) Violates(err error, constraint string) bool {
	e, ok := errors.AsType[*msqlite.Error](err)
	if !ok {
		return false
	}
	if e.Code() == sqlite3.SQLITE_CONSTRAINT_TRIGGER {
		return strings.Contains(e.Error(), constraint)
	}
	column, ok := uniqueColumns[constraint]
	if !ok {
		return false
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return strings.Contains(e.Error(), column)
	}
	return false
}
