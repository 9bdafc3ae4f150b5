// Package sqlite stores graph checkpoints in an embedded SQLite database;
// it owns the schema, its migrations and the SQL, and uses the pure-Go
// modernc.org/sqlite driver, so builds need no cgo.
//
// The layout is LangGraph's: one row per checkpoint, each field version
// stored once per thread namespace and shared by every checkpoint naming
// it, and pending writes keyed by checkpoint, task and index. Get reads a
// field's delta chain in a single recursive query. Blobs are keyed by
// version before field, so the blobs one checkpoint introduces (they all
// have its id as version) sit side by side in the key's index, and a
// commit writes a page or two of it to the log, not one per changed field.
//
// The database runs in WAL mode, so readers do not wait for the writer.
// A process's writes go through one group-commit writer
// (internal/groupcommit): Puts of concurrent runs that arrive while a
// commit is under way share the next one, and none returns before its
// commit. Processes sharing the file wait for the lock up to the busy
// timeout every Trellis SQLite database has (internal/sqlopen), so
// concurrent Puts queue instead of failing.
//
// synchronous=NORMAL: a commit survives the process crashing but may be
// lost, with the commits after it, if the machine loses power; the file
// stays consistent either way. It saves an fsync per superstep.
package sqlite
