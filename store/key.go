package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"
)

// Keys keeps the API keys issued in the service (trellis keys, the admin
// API), beside those listed in the configuration. Only a key's SHA-256
// hash is stored: the key itself is shown once, when it is made, and
// cannot be read back. A revoked key stays listed and names no user.
type Keys interface {
	// CreateKey stores a new key of k.UserID. Returns ErrInvalid for a
	// missing user, a hash that is not SHA-256's size, a prefix or name
	// too long or not text, and ErrConflict when the hash is stored
	// already.
	CreateKey(ctx context.Context, k NewKey) (Key, error)

	// KeyUser returns the user of the live key whose SHA-256 hash is
	// hash. Returns ErrNotFound when no key has it or it is revoked.
	KeyUser(ctx context.Context, hash [sha256.Size]byte) (string, error)

	// ListKeys returns a page of the keys, live and revoked, newest
	// first: the user's, or everyone's when userID is "". Returns
	// ErrInvalid for a negative limit or a cursor it did not make.
	ListKeys(ctx context.Context, userID string, page Page) (KeyPage, error)

	// RevokeKey revokes a key, at once for every process that reads the
	// record, and returns it. Revoking a revoked key changes nothing.
	// Returns ErrNotFound when no key has the id.
	RevokeKey(ctx context.Context, id string) (Key, error)

	// HasKeys reports whether any live key is stored.
	HasKeys(ctx context.Context) (bool, error)
}

// NewKey is a key to store: its owner, a name to tell it by, its hash
// and the first characters of the key, shown in lists.
type NewKey struct {
	UserID string
	Name   string
	Hash   [sha256.Size]byte
	Prefix string
}

// Limits of a key's name and prefix, in bytes.
const (
	MaxKeyName   = 200
	MaxKeyPrefix = 16
)

// Validate reports ErrInvalid for a key that cannot be stored.
func (k NewKey) Validate() error {
	switch {
	case k.UserID == "" || len(k.UserID) > MaxIDBytes || !ValidText(k.UserID):
		return fmt.Errorf("%w: a key's user id is text of 1 to %d bytes", ErrInvalid, MaxIDBytes)
	case len(k.Name) > MaxKeyName || !ValidText(k.Name):
		return fmt.Errorf("%w: a key's name is text of at most %d bytes", ErrInvalid, MaxKeyName)
	case k.Prefix == "" || len(k.Prefix) > MaxKeyPrefix || !ValidText(k.Prefix):
		return fmt.Errorf("%w: a key's prefix is text of 1 to %d bytes", ErrInvalid, MaxKeyPrefix)
	case k.Hash == [sha256.Size]byte{}:
		return fmt.Errorf("%w: a key needs its hash", ErrInvalid)
	}
	return nil
}

// Key is a stored key, without its hash.
type Key struct {
	ID        string     `json:"id"`
	UserID    string     `json:"user_id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// KeyPage is a page of keys.
type KeyPage struct {
	Keys []Key `json:"keys"`
	// NextCursor fetches the next page; "" when this page is the last.
	NextCursor string `json:"next_cursor"`
}
