// Package sqlitestore keeps the chat service's record (store.Store) in an
// embedded SQLite database through the pure-Go modernc.org/sqlite driver,
// so a fresh machine needs neither cgo nor a database server. It owns the
// schema and its embedded migrations, runs the SQL it shares with
// PostgreSQL (internal/sqlstore), and appends events a statement per row
// (a row holds a batch: see sqlstore.EventSep).
// The database is opened as every Trellis SQLite file is
// (internal/sqlopen), whose connections keep each query's prepared
// statement.
//
// The database runs in WAL mode, so readers never wait for the writer.
// Every write is one transaction that takes SQLite's write lock as it
// begins (BEGIN IMMEDIATE); within a process writes go through one
// group-commit writer (internal/groupcommit), which runs the writes
// waiting at the moment in one transaction, each in a savepoint, and
// answers none before the commit; processes sharing the file wait on the
// lock for up to sqlopen.BusyTimeout. Holding the lock for the whole
// transaction is what makes a run's event numbers gap-free and the
// one-active-run check race-free.
//
// synchronous=NORMAL: a commit survives the process crashing but may be
// lost, with the transactions after it, if the machine loses power, and
// the file stays consistent either way. It saves an fsync per event.
//
// The full-text indexes over memories and chunks are FTS5 tables kept by
// triggers; while small, each write that adds to one merges it into one
// segment (optimizeWhileSmall), because SQLite re-prepares FTS5's segment
// lookup on every search of an index with segment 1 among several.
package sqlitestore
