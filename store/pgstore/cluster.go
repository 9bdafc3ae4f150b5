package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/sqlstore"
)

// Several processes sharing one database coordinate through PostgreSQL
// alone, with two of its primitives:
//
//   - Liveness is a session-level advisory lock keyed by the process's
//     owner name (Run.Owner). Listen takes it on a connection of its own
//     and holds it for the process's life; the server releases it when
//     that session ends, however the process died. A process is alive
//     exactly while some session holds its lock, and ClaimOrphans takes
//     the runs of owners that are not.
//   - Delivery is LISTEN/NOTIFY on a channel per owner: Notify sends a
//     store.Notice to the process owning a run, whose Listener.Next
//     receives it.
//
// Lock keys and channel names are derived from the owner name qualified by
// current_schema(), because both are database-wide while a store lives in
// a schema: stores in separate schemas of one database (parallel tests,
// side-by-side deployments) never see each other's locks or notices.
//
// Both need a real session, so the database must be reached directly or
// through a session-pooling proxy; a transaction-pooling proxy (pgbouncer
// in transaction mode) breaks them.

// ownerScoped is the SQL for the owner name bound to param, qualified by
// the session's schema. quote_ident makes the pair unambiguous: a schema
// name with a ':' in it comes out quoted.
func ownerScoped(param string) string {
	return `quote_ident(coalesce(current_schema(), '')) || ':' || ` + param + `::text`
}

// ownerKeySQL is the SQL for the advisory lock key of the owner bound to
// param.
func ownerKeySQL(param string) string {
	return `hashtextextended('trellis.owner:' || ` + ownerScoped(param) + `, 0)`
}

// ownerChannelSQL is the SQL for the NOTIFY channel of the owner bound to
// param: "trellis_" and 16 hex digits, well under the 63 bytes an
// identifier may have however long the owner name is. Two owners sharing
// a channel by a hash collision would only see notices that Next drops,
// since every notice names its owner.
func ownerChannelSQL(param string) string {
	return `'trellis_' || lpad(to_hex(hashtextextended('trellis.channel:' || ` + ownerScoped(param) + `, 0)), 16, '0')`
}

// maxPayload is the size NOTIFY payloads must stay under.
const maxPayload = 8000

// Timings of a Listener's connection.
const (
	// heartbeat is how long Next waits on an idle connection before it
	// checks that the session is still there, so a connection lost
	// without a word from the server (a network partition) is noticed
	// in about heartbeat+pingTimeout rather than when the OS gives up.
	heartbeat   = 15 * time.Second
	pingTimeout = 5 * time.Second
	// closeTimeout bounds Close's round trip to the server.
	closeTimeout = 5 * time.Second
)

// keepaliveSQL makes the server notice a vanished peer (a machine that
// died, a partition) in about 25 s rather than after the operating
// system's default of two hours, so that its lock, and so its runs, are
// freed as soon. Ignored on Unix sockets, where a dead peer is seen at
// once anyway.
const keepaliveSQL = `SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3;
SET tcp_user_timeout = 25000`

// Listener is a process's presence in the database: while it is open the
// process holds its owner's lock, so it is seen as alive and its runs are
// left alone, and it receives the notices sent to its owner.
//
// Keep calling Next for as long as the Listener is open: notices not read
// hold back the database's notification queue, which every process on the
// database shares, and Next is also what notices a lost connection. After
// a loss, Reopen takes the owner's lock again on a new connection.
//
// Next and Reopen are meant for one goroutine; calls to them are
// serialised. Close may be called at any time, also while Next waits: it
// interrupts Next, which returns an error wrapping net.ErrClosed.
type Listener struct {
	store     *Store
	owner     string
	channel   string
	conn      *pgx.Conn
	heartbeat time.Duration

	// closing is cancelled by Close first, to interrupt a waiting Next.
	closing context.Context
	stop    context.CancelFunc

	// mu is held by Next and Reopen while they use conn and by Close, so
	// conn has one user at a time.
	mu sync.Mutex
	// err is what Next returns once the listener is closed or its
	// connection lost; nil while it is usable.
	err error
	// closed is set by Close: a closed Listener is not reopened.
	closed bool
}

// Listen makes the calling process visible as owner to the other
// processes sharing the database: it takes owner's lock and listens for
// notices sent to owner. When it returns, both are in place, so the
// caller can start (or resume) runs as owner knowing that no other
// process will claim them while the Listener stays open. ctx bounds
// Listen itself, not the Listener's life; close the Listener with Close.
//
// It returns ErrConflict when another live session holds owner already:
// owner names must be unique per process start. ErrInvalid for an empty
// owner.
//
// The Listener's connection is taken from the pool and hijacked: it never
// goes back. Its session state is the process's liveness, so it must not
// be handed to other queries: a pool connection still holding the lock
// would keep a dead Listener alive in others' eyes for as long as the
// pool keeps the connection, and ClaimOrphans running on it would find
// the lock free (advisory locks are re-entrant within a session) and
// claim a live owner's runs. Hijacking also keeps the pool's Close from
// waiting on a Listener; the connection no longer counts against the
// pool's size.
func (s *Store) Listen(ctx context.Context, owner string) (*Listener, error) {
	if owner == "" {
		return nil, fmt.Errorf("pgstore: listen: %w: owner is required", store.ErrInvalid)
	}
	conn, channel, err := s.session(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("pgstore: listen as %s: %w", owner, err)
	}
	closing, stop := context.WithCancel(context.Background())
	return &Listener{store: s, owner: owner, channel: channel, conn: conn, heartbeat: heartbeat, closing: closing, stop: stop}, nil
}

// session opens a connection of its own holding owner's lock and
// listening on owner's channel (see Listen), and returns it with the
// channel's name.
func (s *Store) session(ctx context.Context, owner string) (*pgx.Conn, string, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, "", err
	}
	conn := pc.Hijack()
	fail := func(err error) (*pgx.Conn, string, error) {
		// Ending the session releases the lock if it was taken.
		cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		_ = conn.Close(cctx)
		return nil, "", err
	}

	var (
		locked  bool
		channel string
	)
	err = conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+ownerKeySQL("$1")+`), `+ownerChannelSQL("$1"), owner).
		Scan(&locked, &channel)
	if err != nil {
		return fail(err)
	}
	if !locked {
		return fail(fmt.Errorf("%w: another live session holds owner %q", store.ErrConflict, owner))
	}
	// No arguments: the simple protocol, which takes several statements.
	if _, err := conn.Exec(ctx, keepaliveSQL+"; LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fail(err)
	}
	return conn, channel, nil
}

// Reopen makes a Listener whose connection was lost (Next reported it)
// usable again: on a new connection it takes the owner's lock again and
// listens again, as Listen does. It does nothing on a Listener that is
// not lost.
//
// While the lock was free, other processes may have claimed the owner's
// running runs (ClaimOrphans): those are theirs now, and the caller's
// writes to them fail with ErrNotOwner. The runs still owned by the owner
// are the caller's again once Reopen returns nil. Notices sent while the
// connection was lost are gone.
//
// It returns ErrConflict while another session holds the owner's lock
// (the lost session may take a moment to end on the server, and
// ClaimOrphans holds the lock of an owner it looks at for a moment), an
// error wrapping net.ErrClosed after Close, and the database's error when
// it cannot be reached; the caller retries later.
func (l *Listener) Reopen(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("pgstore: reopen listener of %s: %w", l.owner, net.ErrClosed)
	}
	if l.err == nil {
		return nil
	}
	conn, channel, err := l.store.session(ctx, l.owner)
	if err != nil {
		return fmt.Errorf("pgstore: reopen listener of %s: %w", l.owner, err)
	}
	l.conn, l.channel, l.err = conn, channel, nil
	return nil
}

// Next returns the next notice for the Listener's owner, waiting for one
// as long as it takes. Payloads that are not a valid store.Notice for this
// owner are skipped: a notice is only a hint (see store.Notice), so
// dropping a bad one loses nothing.
//
// When ctx ends it returns ctx.Err() and the Listener stays usable; a
// check of the connection under way (see heartbeat) may delay that by up
// to a few seconds. After Close it returns an error wrapping
// net.ErrClosed. Any other error means the connection is lost: the
// session, and with it the owner's lock, is gone or going, other
// processes may claim the owner's runs at any moment, and the caller
// must stop acting as their owner. Every later Next returns the same
// error until Reopen succeeds.
func (l *Listener) Next(ctx context.Context) (store.Notice, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return store.Notice{}, l.err
	}
	wait, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(l.closing, cancel)()
	for {
		if l.closing.Err() != nil {
			return store.Notice{}, fmt.Errorf("pgstore: next notice for %s: %w", l.owner, net.ErrClosed)
		}
		if err := ctx.Err(); err != nil {
			return store.Notice{}, err
		}
		idle, stopIdle := context.WithTimeout(wait, l.heartbeat)
		pn, err := l.conn.WaitForNotification(idle)
		idled := errors.Is(idle.Err(), context.DeadlineExceeded)
		stopIdle()
		if pn != nil {
			if n, ok := decodeNotice(pn.Payload, l.owner); ok {
				return n, nil
			}
		}
		switch {
		case err == nil:
			// A payload not for us; wait for the next.
		case l.conn.IsClosed():
			// The server ended the session, or the network failed.
			return store.Notice{}, l.lose(err)
		case l.closing.Err() != nil, ctx.Err() != nil:
			// Reported at the top of the loop. The wait was interrupted
			// by a deadline on the socket, which leaves conn usable.
		case idled:
			if err := l.ping(ctx); err != nil {
				return store.Notice{}, l.lose(err)
			}
		default:
			return store.Notice{}, l.lose(err)
		}
	}
}

// ping checks that the session still answers. It does not stop when ctx
// ends: a query cut short leaves the connection unusable, so it runs to
// its own timeout instead.
func (l *Listener) ping(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pingTimeout)
	defer cancel()
	_, err := l.conn.Exec(pctx, "SELECT 1")
	return err
}

// lose records that the connection is lost, closes what is left of it so
// the session surely ends (the process stops acting as owner; the
// database must see it gone too), and returns the error Next reports from
// now on. l.mu is held.
func (l *Listener) lose(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = l.conn.Close(ctx)
	l.err = fmt.Errorf("pgstore: listener of %s lost its connection: %w", l.owner, err)
	return l.err
}

// decodeNotice reads a notice sent to owner, reporting false for a payload
// that is not one.
func decodeNotice(payload, owner string) (store.Notice, bool) {
	var n store.Notice
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		return store.Notice{}, false
	}
	if n.Owner != owner || n.Validate() != nil {
		return store.Notice{}, false
	}
	return n, true
}

// Close stops listening, releases the owner's lock and closes the
// connection. When it returns nil the lock is free: from then on other
// processes see the owner as gone, and ClaimOrphans hands its running runs
// to them, so stop or finish them first.
//
// Close may be called while Next waits (Next then returns an error
// wrapping net.ErrClosed) and more than once; after the first call, and
// after Next reported the connection lost, it only keeps the Listener from
// being reopened, and returns nil. If the server cannot be told in time, Close still closes the
// connection, which ends the session and so releases the lock a moment
// later, and returns the error.
func (l *Listener) Close() error {
	l.stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.err != nil { // closed already, or lost: its connection is closed
		return nil
	}
	l.err = fmt.Errorf("pgstore: listener of %s: %w", l.owner, net.ErrClosed)
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	// The explicit unlock makes the lock free when Close returns; the
	// server ending the session after conn.Close would free it too, but
	// only some time after.
	_, err := l.conn.Exec(ctx, "UNLISTEN *; SELECT pg_advisory_unlock_all()")
	if cerr := l.conn.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgstore: close listener of %s: %w", l.owner, err)
	}
	return nil
}

// Notify sends n to the process n.Owner names, if it listens; a notice
// to an owner nobody listens as is dropped without an error, as the
// answer it points to is stored already (see store.Notice). Store the
// answer, commit, then notify. Returns ErrInvalid for a notice that
// n.Validate refuses, or whose JSON is too big for NOTIFY.
func (s *Store) Notify(ctx context.Context, n store.Notice) error {
	if err := n.Validate(); err != nil {
		return fmt.Errorf("pgstore: notify %s: %w", n.Owner, err)
	}
	payload, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("pgstore: notify %s: %w", n.Owner, err)
	}
	if len(payload) >= maxPayload {
		return fmt.Errorf("pgstore: notify %s: %w: notice of %d bytes, NOTIFY takes under %d", n.Owner, store.ErrInvalid, len(payload), maxPayload)
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify(`+ownerChannelSQL("$1")+`, $2)`, n.Owner, string(payload)); err != nil {
		return fmt.Errorf("pgstore: notify %s of %s on run %s: %w", n.Owner, n.Kind, n.RunID, err)
	}
	return nil
}

// Alive reports whether a live session holds owner's lock: whether the
// process that owner names has an open Listener. It reads pg_locks and
// takes no lock itself. The answer can be out of date by the time the
// caller acts on it; ClaimOrphans does not rely on it to decide.
func (s *Store) Alive(ctx context.Context, owner string) (bool, error) {
	// pg_locks shows a bigint advisory key as its high half in classid,
	// its low half in objid, and objsubid 1.
	var alive bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (
    SELECT 1 FROM pg_locks l, (SELECT `+ownerKeySQL("$1")+` AS k) o
    WHERE l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock' AND l.objsubid = 1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = ((o.k >> 32) & 4294967295)::oid AND l.objid = (o.k & 4294967295)::oid)`, owner).Scan(&alive)
	if err != nil {
		return false, fmt.Errorf("pgstore: is %s alive: %w", owner, err)
	}
	return alive, nil
}

// ClaimOrphans makes owner the owner of every running run whose owner is
// gone, and returns those runs, oldest first (an empty slice when there
// are none), for the caller to resume from their last checkpoints.
// Interrupted runs are not claimed: they wait for an answer, and whoever
// resumes them becomes their owner (ResumeRun). Nor are runs that ended or
// were superseded.
//
// owner must be the caller's, held by its open Listener; otherwise the
// claimed runs would at once look orphaned to everyone else. It returns
// ErrInvalid when no live session holds owner, or owner is empty.
//
// Each other owner of running runs is looked at in a transaction of its
// own: pg_try_advisory_xact_lock on its key succeeds only if no session
// holds its lock (session-level and transaction-level requests for one
// advisory lock key conflict with each other, as the PostgreSQL manual
// says in "Advisory Locks"), that is when its process is gone; then its
// running runs are moved to owner and the commit releases the lock. An
// owner whose lock is held is alive and left alone. Concurrent calls never
// claim one run twice: only one transaction at a time can hold a dead
// owner's key, a caller that fails to get it skips that owner, and the
// UPDATE re-reads each run's owner under its row lock, so a run moved by
// a transaction that committed meanwhile is not matched again. A run
// owned by "" (no owner recorded) always counts as orphaned, as Listen
// refuses the empty owner.
//
// On an error after some owners' runs were claimed, it returns those runs
// with the error: they belong to owner now, and the caller must resume
// them as it would on success.
func (s *Store) ClaimOrphans(ctx context.Context, owner string) ([]store.Run, error) {
	if owner == "" {
		return nil, fmt.Errorf("pgstore: claim orphans: %w: owner is required", store.ErrInvalid)
	}
	alive, err := s.Alive(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("pgstore: claim orphans as %s: %w", owner, err)
	}
	if !alive {
		return nil, fmt.Errorf("pgstore: claim orphans as %s: %w: no live session listens as that owner", owner, store.ErrInvalid)
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT owner FROM runs WHERE status = 'running' AND NOT superseded AND owner <> $1`, owner)
	if err != nil {
		return nil, fmt.Errorf("pgstore: claim orphans as %s: %w", owner, err)
	}
	owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgstore: claim orphans as %s: %w", owner, err)
	}
	claimed := []store.Run{}
	for _, other := range owners {
		runs, err := s.claimFrom(ctx, owner, other)
		claimed = append(claimed, runs...)
		if err != nil {
			sortRuns(claimed)
			return claimed, fmt.Errorf("pgstore: claim runs of %s as %s: %w", other, owner, err)
		}
	}
	sortRuns(claimed)
	return claimed, nil
}

// claimFrom moves the running runs of other to owner if other's process
// is gone, and returns them; nil when other is alive.
func (s *Store) claimFrom(ctx context.Context, owner, other string) ([]store.Run, error) {
	var runs []store.Run
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var gone bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(`+ownerKeySQL("$1")+`)`, other).Scan(&gone); err != nil {
			return err
		}
		if !gone {
			return nil
		}
		rows, err := tx.Query(ctx, `UPDATE runs SET owner = $1
WHERE owner = $2 AND status = 'running' AND NOT superseded RETURNING `+sqlstore.RunCols, owner, other)
		if err != nil {
			return err
		}
		runs, err = sqlstore.Collect(rows, sqlstore.ScanRun)
		return err
	})
	if err != nil {
		return nil, err
	}
	return runs, nil
}

// sortRuns orders runs oldest first.
func sortRuns(runs []store.Run) {
	slices.SortFunc(runs, func(a, b store.Run) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
}
