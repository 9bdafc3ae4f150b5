package middleware

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// KeyPrefix begins every key issued in the service, so that a key found
// in a log or a repository is known for what it is (secret scanners
// match such prefixes).
const KeyPrefix = "trk_"

// ShownPrefix is how many characters of a key its record keeps to tell
// it apart in a list: KeyPrefix and 8 of the random part, 48 bits,
// which say nothing useful of the other 208.
const ShownPrefix = len(KeyPrefix) + 8

// NewKey makes a key to issue: KeyPrefix and 32 random bytes, unpadded
// base64url; its SHA-256 hash, which is all that is stored; and the
// characters a list shows of it.
func NewKey() (key APIKey, hash [sha256.Size]byte, shown string) {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	k := KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return APIKey(k), sha256.Sum256([]byte(k)), k[:ShownPrefix]
}

// storedKeys remembers, for StoredKeyTTL, which user a stored key named,
// so that a client's every request is not a database read. A key that
// named none is not remembered: a key issued a moment ago on another
// process works at once, and the failure limiter slows guessing.
type storedKeys struct {
	lookup func(ctx context.Context, hash [sha256.Size]byte) (string, error)
	mu     sync.Mutex
	users  map[[sha256.Size]byte]storedUser
}

type storedUser struct {
	user  string
	until time.Time
}

// maxStoredKeys bounds what storedKeys remembers; when full, it forgets
// everything, which costs one read per client.
const maxStoredKeys = 10_000

func (s *storedKeys) user(ctx context.Context, hash [sha256.Size]byte) (string, error) {
	now := time.Now()
	s.mu.Lock()
	u, ok := s.users[hash]
	s.mu.Unlock()
	if ok && now.Before(u.until) {
		return u.user, nil
	}
	user, err := s.lookup(ctx, hash)
	if err != nil || user == "" {
		return "", err
	}
	s.mu.Lock()
	if len(s.users) >= maxStoredKeys {
		clear(s.users)
	}
	s.users[hash] = storedUser{user: user, until: now.Add(StoredKeyTTL)}
	s.mu.Unlock()
	return user, nil
}
