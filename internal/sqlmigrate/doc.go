// Package sqlmigrate applies numbered SQL migrations, embedded in the binary,
// to SQLite and PostgreSQL alike. It owns the bookkeeping (which scripts
// exist, which the database has already run, and in what order the rest go)
// and the one way each database is migrated: SQLite under BEGIN IMMEDIATE,
// PostgreSQL under a transaction-level advisory lock per schema, so
// processes starting together migrate once. Apply alone leaves the
// transaction to its caller.
package sqlmigrate
