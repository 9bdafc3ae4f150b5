// Package sqlmigrate applies numbered SQL migrations, embedded in the binary,
// to SQLite and PostgreSQL alike. It owns only the bookkeeping: which scripts
// exist, which the database has already run, and in what order the rest go.
// The caller owns the transaction, so each backend can take the lock its
// database needs (BEGIN IMMEDIATE, pg_advisory_xact_lock) before calling
// Apply.
package sqlmigrate
