package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/trellis-ai/trellis/store"
)

// Store implements store.Store over a backend's DB. The backends embed
// it, and add Close and what only their database offers.
type Store struct {
	db DB
	// name prefixes errors: the backend's package.
	name string
	// latest is the newest migration this binary knows; Ping checks it
	// is applied.
	latest int
}

// Both backends are this Store embedded: it is where they meet the
// record's interfaces.
var (
	_ store.Store      = (*Store)(nil)
	_ store.Documents  = (*Store)(nil)
	_ store.Memories   = (*Store)(nil)
	_ store.Users      = (*Store)(nil)
	_ store.Workspaces = (*Store)(nil)
)

// MigrationTable records the migrations applied to the chat store's
// schema, in either database; it is named for the store so the checkpoint
// saver can share the database (file or schema) with migrations of its
// own.
const MigrationTable = "chat_migrations"

// New returns a Store over db whose errors begin with name, and whose
// Ping checks that migration latest is applied.
func New(db DB, name string, latest int) *Store {
	return &Store{db: db, name: name, latest: latest}
}

// Ping implements store.Store: the database answers a query and records
// the newest migration this binary knows.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	err := s.db.QueryRow(ctx, "SELECT count(*) FROM "+MigrationTable+" WHERE version = ?", s.latest).Scan(&n)
	if err == nil && n != 1 {
		err = fmt.Errorf("migration %d is not applied", s.latest)
	}
	if err != nil {
		return s.errorf("ping: %w", err)
	}
	return nil
}

// errorf is fmt.Errorf with the backend's name in front.
func (s *Store) errorf(format string, args ...any) error {
	return fmt.Errorf(s.name+": "+format, args...)
}

// noRows reports whether err says a query found no row.
func noRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// owned returns ErrNotFound unless row id of table is the user's. table
// is one of this package's table names, never outside text.
func owned(ctx context.Context, q Querier, table, userID, id string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM `+table+` WHERE id = ? AND user_id = ?`, id, userID).Scan(&one)
	if noRows(err) {
		return store.ErrNotFound
	}
	return err
}

// RunMissingOr returns ErrNotFound when the run does not exist,
// ErrNotOwner when owner is set and the run is another's, and otherwise
// err: why a conditional update of it changed nothing.
func RunMissingOr(ctx context.Context, q Querier, runID, owner string, err error) error {
	var stored string
	switch e := q.QueryRow(ctx, `SELECT owner FROM runs WHERE id = ?`, runID).Scan(&stored); {
	case noRows(e):
		return store.ErrNotFound
	case e != nil:
		return e
	case owner != "" && stored != owner:
		return store.ErrNotOwner
	}
	return err
}

// ownsConversation returns ErrNotFound unless the user has the
// conversation.
func ownsConversation(ctx context.Context, q Querier, userID, id string) error {
	return oneRow(q.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = ? AND user_id = ?`, id, userID))
}

// takesWrites is ownsConversation for what a write adds to the
// conversation: one being deleted (BeginDelete) is as good as gone. It
// locks the conversation's row until the write commits, so that on
// PostgreSQL the delete's mark waits for the write, or the write sees
// the mark.
func (s *Store) takesWrites(ctx context.Context, q Querier, userID, id string) error {
	err := oneRow(q.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = ? AND user_id = ? AND NOT deleting`+s.db.ForUpdate(), id, userID))
	if errors.Is(err, store.ErrNotFound) {
		return notTaking(ctx, q, userID)
	}
	return err
}

// notTaking is the error of a write to a conversation of the user that
// is gone or being deleted: ErrErasing when the user is being erased,
// whose erasure deletes their conversations one by one (and says why a
// write is refused, as the schema's triggers do elsewhere), else
// ErrNotFound.
func notTaking(ctx context.Context, q Querier, userID string) error {
	err := oneRow(q.QueryRow(ctx, `SELECT 1 FROM erasures WHERE user_id = ?`, userID))
	switch {
	case err == nil:
		return store.ErrErasing
	case errors.Is(err, store.ErrNotFound):
		return store.ErrNotFound
	}
	return err
}

// changesOne runs a statement that writes a row named by its key:
// ErrNotFound when there is none.
func changesOne(ctx context.Context, q Querier, query string, args ...any) error {
	n, err := q.Exec(ctx, query, args...)
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

// oneRow scans a row of the constant 1: ErrNotFound when there is none.
func oneRow(row Row) error {
	var one int
	err := row.Scan(&one)
	if noRows(err) {
		return store.ErrNotFound
	}
	return err
}
