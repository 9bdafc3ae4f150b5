package sqlopen

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"
)

// BusyTimeout is how long a connection waits for another process's write
// lock before its statement fails with SQLITE_BUSY. Within a process the
// writers queue in Go (internal/groupcommit) and never wait here, so
// this is only the wait behind another process sharing the file: long
// enough to outlast that process's group commit, its checkpoint of the
// WAL and a slow disk's fsync under load, short enough that a process
// stuck holding the lock shows as an error within a request's patience.
// The store and the checkpoint saver share it, so neither gives up on a
// shared file before the other.
const BusyTimeout = 10 * time.Second

// MaxIdleConns is how many connections to a database file the pool
// keeps open between uses: about as many as read at once under load, so
// a read finds a connection with its statements prepared.
const MaxIdleConns = 16

// MaxOpenConns bounds the connections to a database file, and so the
// descriptors a process holds on it (each connection holds the database
// and its WAL). SQLite has one writer at a time (internal/groupcommit
// queues them in Go) and readers run on the process's few cores, so
// more connections buy no speed; without a bound a burst of requests
// opened hundreds. It equals MaxIdleConns: a connection the pool closed
// while another held a lock on the file keeps its descriptor open in
// SQLite until no connection of the process holds one, so a pool that
// opened and closed connections under load leaked descriptors until the
// process was quiet; a pool that never closes one under load has none
// to leak.
const MaxOpenConns = MaxIdleConns

// MaxIdleTime is how long a connection may sit unused before the pool
// closes it, so that a quiet process comes back to the descriptors it
// started with. It is a variable only so that a test's server process
// can shorten it before it opens a database (cmd/trellis's tests do, to
// see the descriptors come back without waiting a minute); nothing else
// sets it.
var MaxIdleTime = time.Minute

// params are appended to every connection's DSN. busy_timeout comes first
// (the driver orders it so) and covers the others. WAL lets readers go on
// while one writes. synchronous=NORMAL: a commit survives the process
// crashing but may be lost, with the transactions after it, if the
// machine loses power, and the file stays consistent either way; it
// saves an fsync per commit. foreign_keys makes deletes cascade.
// secure_delete overwrites deleted content with zeros, so what a user
// deletes, or an erasure takes, does not stay in the file's free pages
// and free space (the WAL keeps it until TruncateWAL).
// temp_store=MEMORY keeps temporary files in memory, among them the
// statement journals of a group commit's savepoints (internal/groupcommit):
// a journal past 64 KiB, which a commit of several turns' writes passes,
// spilled to a file SQLite created, wrote and removed for the batch (a
// quarter of a turn's write calls under load), and the pages it held, a
// user's rows as they were, stayed in the disk's free space.
// _txlock=immediate makes a writing transaction take the write lock at
// BEGIN, where waiting for it is safe, instead of failing with
// SQLITE_BUSY on its first write.
var params = fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"+
	"&_pragma=foreign_keys(1)&_pragma=secure_delete(1)&_pragma=temp_store(MEMORY)&_txlock=immediate", BusyTimeout.Milliseconds())

// SQLite opens the database at path: a file name, a "file:" URI, or
// ":memory:" for a private in-memory database that lives until the
// returned DB is closed, on a pool of one connection. A plain file name
// must not contain '?'.
func SQLite(path string) (*sql.DB, error) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	c, err := msqlite.NewConnector(path + sep + params)
	if err != nil {
		return nil, fmt.Errorf("sqlopen: %s: %w", path, err)
	}
	db := sql.OpenDB(cachingConnector{c})
	if strings.Contains(path, ":memory:") || strings.Contains(path, "mode=memory") {
		// Each connection to ":memory:" is a database of its own, so
		// the pool must hold exactly one, forever.
		db.SetMaxOpenConns(1)
		db.SetConnMaxIdleTime(0)
		db.SetConnMaxLifetime(0)
		return db, nil
	}
	// database/sql keeps two idle connections by default: under a
	// dozen concurrent requests every other read closed its connection
	// and the next opened one anew, preparing its statements again.
	db.SetMaxOpenConns(MaxOpenConns)
	db.SetMaxIdleConns(MaxIdleConns)
	db.SetConnMaxIdleTime(MaxIdleTime)
	return db, nil
}

// ErrWALBusy: a reader or writer kept TruncateWAL from emptying the
// write-ahead log; try again.
var ErrWALBusy = errors.New("sqlopen: the write-ahead log is in use")

// WALWait is how long TruncateWAL waits for the connections using the
// log. While it waits no other connection may write the database, so a
// long read (another process's backup, a slow export) would stall every
// writer for as long as BusyTimeout: it gives up soon instead, and its
// caller tries again later.
const WALWait = 100 * time.Millisecond

// TruncateWAL copies every transaction of the database's write-ahead log
// into the database file and truncates the log to zero bytes, waiting at
// most WALWait for the connections using it. With secure_delete, deleted
// content is then gone from both files: the log no longer holds the
// pages as they were before the delete. Returns an error matching
// ErrWALBusy when a connection kept the log in use. A database without a
// log (in memory) has nothing to do.
func TruncateWAL(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlopen: checkpoint the write-ahead log: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", WALWait.Milliseconds())); err != nil {
		return fmt.Errorf("sqlopen: checkpoint the write-ahead log: %w", err)
	}
	defer func() {
		// The connection goes back to the pool with the usual wait, or
		// not at all: a writer on it would give up after WALWait.
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", BusyTimeout.Milliseconds())); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	var busy, frames, copied int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &copied); err != nil {
		return fmt.Errorf("sqlopen: checkpoint the write-ahead log: %w", err)
	}
	if busy != 0 {
		return fmt.Errorf("sqlopen: checkpoint the write-ahead log: %w", ErrWALBusy)
	}
	return nil
}
