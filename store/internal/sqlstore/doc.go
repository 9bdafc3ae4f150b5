// Package sqlstore is the chat service's record (store.Store) written once
// for both databases: every query whose SQL is the same on SQLite and
// PostgreSQL lives here, with ? placeholders, and runs through DB, which
// each backend implements over its own driver. The backends keep what
// truly differs: opening and migrating, the driver adapters (PostgreSQL
// rebinds ? to $n; SQLite keeps prepared statements and writes through its
// group-commit writer), how a batch of events is appended (one unnest
// statement on PostgreSQL), the full-text indexes (ChunkSearch,
// MemorySearch, and ChunkIndex where the client builds a chunk's entry),
// and PostgreSQL's cluster primitives (LISTEN/NOTIFY, advisory locks).
// A row of events holds the batch one append stored (EventSep); the reads
// here take it apart, so the events come back one by one as stored.
//
// The SQL here is the subset both databases read alike: RETURNING, row
// values, `true` and `NOT` on a boolean column (SQLite's 0/1 integers),
// subqueries in RETURNING. Times go in as DB.Time encodes them, once per
// call, and come out through a scanner that takes a time.Time
// (PostgreSQL's timestamptz) or SQLite's fixed-width text; JSON goes in as
// text and comes out as bytes.
package sqlstore
