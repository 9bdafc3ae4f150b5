// Package sqlite stores graph checkpoints in an embedded SQLite database;
// it owns the schema, its migrations and the SQL, and uses the pure-Go
// modernc.org/sqlite driver, so builds need no cgo.
//
// The layout is LangGraph's: one row per checkpoint, each field version
// stored once per thread namespace and shared by every checkpoint naming
// it, and pending writes keyed by checkpoint, task and index. Get reads a
// field's delta chain in a single recursive query.
//
// The database runs in WAL mode, so readers do not wait for the writer.
// Writers take the lock when their transaction begins and wait for it up
// to a busy timeout, so concurrent Puts queue instead of failing.
package sqlite
