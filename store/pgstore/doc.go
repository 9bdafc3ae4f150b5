// Package pgstore keeps the chat service's record (store.Store) in
// PostgreSQL through pgx; it owns the schema and its embedded migrations,
// runs the SQL it shares with SQLite (internal/sqlstore, written with ?
// placeholders, which it rebinds to $1, $2, …), keeps the SQL only
// PostgreSQL speaks (events appended in one unnest statement, the cluster
// below), begins each transaction with its first statement and holds
// back what needs no answer for the next (tx.go), builds the chunks'
// tsvectors from the server's reading of each distinct piece of their
// text (vectors.go), and turns pgx errors into store errors, so no
// package above it imports pgx.
//
// Several processes may share one database. Ids are UUIDv7s made by the
// application, unique without coordination, and every rule that must hold
// across processes is held by the database: a partial unique index allows
// one active run per conversation; a run's event numbers come from a
// counter on the run's row, taken and used in the one statement that
// stores the event; answers to human requests are conditional
// updates, so the first wins. Nothing is cached in the process. The
// processes find each other through the database too (see Listen), and
// Lost tells the errors of a database that went away, which the caller
// may wait out, from those that would come again.
//
// New migrates the schema found on the pool's search_path under an
// advisory lock, so processes starting together migrate once, and one
// database can hold independent stores in separate schemas.
package pgstore
