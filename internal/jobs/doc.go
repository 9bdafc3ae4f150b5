// Package jobs is Trellis' one durable queue for work that outlives a
// request: processing an uploaded document (documents/ingest), learning
// from a conversation's turns and pruning memories on a schedule (cognition),
// erasing a user (cmd/trellis), delivering webhooks (webhooks). It
// is a small wrapper over River, on its PostgreSQL driver (pgx) when the
// service runs on PostgreSQL and its SQLite driver on the embedded
// default, in a database file of its own.
//
// A job is typed arguments (Args, stored as JSON) and a handler registered
// for its kind (Handle). A failed attempt is retried with backoff, up to
// a number of attempts; Permanent marks an error no retry can fix. A job
// whose process died while running it is rescued and run again once
// Config.RescueAfter has passed since its attempt began: by another
// process on PostgreSQL, or by the same one after a restart. Stop lets
// running jobs finish (within its context), so a deploy does not break a
// job a user was promised. Handlers must therefore be idempotent: an
// attempt may run again after a crash. A handler may record how far it
// got (SetProgress), which Newest shows with the job. Debounce stores
// one job for many calls: the one waiting stands for the calls that come
// before it runs, and a call while the job this Queue stored is not due
// reads that job's state rather than inserting again.
//
// River's types stay inside this package: callers see Queue, Workers, Job
// and the options here.
package jobs
