// Package groupcommit runs the write transactions of one SQLite database
// through a single connection, several of them in one commit.
//
// SQLite has one writer at a time. Writers of one process that each begin
// their own transaction queue on the file lock, and a writer that finds
// it taken sleeps in the busy handler for a millisecond or more; every
// commit also writes its WAL frames on its own. A Writer instead takes the
// transactions waiting at the moment it is free, runs each in a savepoint
// of one transaction, commits once, and only then reports each result:
// nothing is acknowledged before it is committed, and a transaction that
// fails is rolled back to its savepoint without touching the others.
//
// Other processes sharing the file still meet this one at SQLite's lock
// (busy_timeout covers them); a Writer only orders its own process.
package groupcommit
