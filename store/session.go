package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"
)

// Sessions keeps the sessions of people signed in on the web page through
// the OpenID Connect provider. Only the SHA-256 hash of a session's
// secret (the cookie's value) is stored, so the record cannot sign
// anyone in. Every process reads the record at each request, so a
// session deleted (signed out, its user erased) is refused at once
// everywhere.
type Sessions interface {
	// CreateSession stores a new session. Returns ErrInvalid for a
	// missing user, an empty hash or an expiry not after now, and
	// ErrConflict when the hash is stored already.
	CreateSession(ctx context.Context, s NewSession) (Session, error)

	// SessionByHash returns the unexpired session whose secret hashes
	// to hash, and marks it seen now when it was last seen more than
	// SessionSeenEvery ago. Returns ErrNotFound when no session has it
	// or it has expired.
	SessionByHash(ctx context.Context, hash [sha256.Size]byte) (Session, error)

	// DeleteSession deletes the session whose secret hashes to hash.
	// Deleting a session that is not stored is not an error.
	DeleteSession(ctx context.Context, hash [sha256.Size]byte) error

	// DeleteExpiredSessions deletes the sessions expired before now and
	// returns how many went.
	DeleteExpiredSessions(ctx context.Context) (int, error)
}

// SessionSeenEvery is how often a session's last-seen time is written:
// not at every request, which would be a write per read.
const SessionSeenEvery = time.Minute

// NewSession is a session to store.
type NewSession struct {
	UserID    string
	Hash      [sha256.Size]byte
	ExpiresAt time.Time
}

// Validate reports ErrInvalid for a session that cannot be stored.
func (s NewSession) Validate(now time.Time) error {
	switch {
	case s.UserID == "" || len(s.UserID) > MaxIDBytes || !ValidText(s.UserID):
		return fmt.Errorf("%w: a session's user id is text of 1 to %d bytes", ErrInvalid, MaxIDBytes)
	case s.Hash == [sha256.Size]byte{}:
		return fmt.Errorf("%w: a session needs its hash", ErrInvalid)
	case !s.ExpiresAt.After(now):
		return fmt.Errorf("%w: a session must expire after now", ErrInvalid)
	}
	return nil
}

// Session is a stored session, without its hash.
type Session struct {
	UserID     string    `json:"user"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
}
