// Package sqlopen opens the databases of Trellis' stores the one way each
// is opened, whoever opens it: an SQLite file with the same pragmas and
// busy timeout for the chat store and the checkpoint saver, which may
// share it, and a PostgreSQL pool that a store owns. Migrating them is
// internal/sqlmigrate's.
package sqlopen
