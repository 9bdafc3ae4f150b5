// Package sqlopen opens the databases of Trellis' stores the one way each
// is opened, whoever opens it: an SQLite file with the same pragmas and
// busy timeout for the chat store, the checkpoint saver and the job
// queue (and TruncateWAL, which a delete and an erasure run on each), and a PostgreSQL pool that a store owns. Migrating them is
// internal/sqlmigrate's.
//
// An SQLite connection keeps the prepared statement of each query run on
// it by its text (up to CachedStatements, the least recently used
// evicted), so callers, River included, write plain ExecContext and
// QueryContext and still parse each query once per connection.
//
// An SQLite file's pool is bounded (MaxOpenConns, all kept while in use,
// closed after MaxIdleTime unused), so the descriptors a process holds on
// the file stay bounded whatever the load.
//
// Backup copies several SQLite files, which a server may be writing, as
// they all were at one instant (what a crash at that instant would
// leave), for trellis backup; Check runs quick_check on a copy.
package sqlopen
