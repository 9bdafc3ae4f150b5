package storetest

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/store"
)

func testSessionLifecycle(t *testing.T, s Record) {
	ctx := t.Context()
	hash := sha256.Sum256([]byte("alice's cookie"))
	expires := time.Now().Add(time.Hour)
	made := must(s.CreateSession(ctx, store.NewSession{UserID: alice, Hash: hash, ExpiresAt: expires}))(t)
	if made.UserID != alice || made.CreatedAt.IsZero() || !made.LastSeenAt.Equal(made.CreatedAt) || made.ExpiresAt.Sub(expires).Abs() > time.Millisecond {
		t.Fatalf("created %+v", made)
	}
	got := must(s.SessionByHash(ctx, hash))(t)
	if got.UserID != alice || !got.CreatedAt.Equal(made.CreatedAt) || !got.ExpiresAt.Equal(made.ExpiresAt) {
		t.Fatalf("read %+v, made %+v", got, made)
	}
	if _, err := s.SessionByHash(ctx, sha256.Sum256([]byte("a guess"))); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown session: %v", err)
	}
	if _, err := s.CreateSession(ctx, store.NewSession{UserID: bob, Hash: hash, ExpiresAt: expires}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a hash stored twice: %v", err)
	}
	if got := must(s.SessionByHash(ctx, hash))(t); got.UserID != alice {
		t.Fatalf("after a conflicting create the session names %q", got.UserID)
	}
	must(0, s.DeleteSession(ctx, hash))(t)
	if _, err := s.SessionByHash(ctx, hash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted session: %v", err)
	}
	must(0, s.DeleteSession(ctx, hash))(t) // deleting again is no error
}

func testSessionExpiry(t *testing.T, s Record) {
	ctx := t.Context()
	short, long := sha256.Sum256([]byte("short")), sha256.Sum256([]byte("long"))
	must(s.CreateSession(ctx, store.NewSession{UserID: alice, Hash: short, ExpiresAt: time.Now().Add(50 * time.Millisecond)}))(t)
	must(s.CreateSession(ctx, store.NewSession{UserID: alice, Hash: long, ExpiresAt: time.Now().Add(time.Hour)}))(t)
	time.Sleep(100 * time.Millisecond)
	if _, err := s.SessionByHash(ctx, short); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an expired session: %v", err)
	}
	if n := must(s.DeleteExpiredSessions(ctx))(t); n != 1 {
		t.Fatalf("deleted %d expired sessions, want 1", n)
	}
	if got := must(s.SessionByHash(ctx, long))(t); got.UserID != alice {
		t.Fatalf("the live session after the sweep: %+v", got)
	}
}

func testSessionInvalid(t *testing.T, s Record) {
	ctx := t.Context()
	hash := sha256.Sum256([]byte("x"))
	for name, ns := range map[string]store.NewSession{
		"no user":     {Hash: hash, ExpiresAt: time.Now().Add(time.Hour)},
		"user NUL":    {UserID: "a\x00b", Hash: hash, ExpiresAt: time.Now().Add(time.Hour)},
		"long user":   {UserID: strings.Repeat("u", store.MaxIDBytes+1), Hash: hash, ExpiresAt: time.Now().Add(time.Hour)},
		"no hash":     {UserID: alice, ExpiresAt: time.Now().Add(time.Hour)},
		"expired":     {UserID: alice, Hash: hash, ExpiresAt: time.Now().Add(-time.Second)},
		"zero expiry": {UserID: alice, Hash: hash},
	} {
		if _, err := s.CreateSession(ctx, ns); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := s.SessionByHash(ctx, hash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused session was stored: %v", err)
	}
}

// Erasing a user deletes their sessions, and no one else's.
func testSessionErased(t *testing.T, s Record) {
	ctx := t.Context()
	a, b := sha256.Sum256([]byte("alice")), sha256.Sum256([]byte("bob"))
	must(s.CreateSession(ctx, store.NewSession{UserID: alice, Hash: a, ExpiresAt: time.Now().Add(time.Hour)}))(t)
	must(s.CreateSession(ctx, store.NewSession{UserID: bob, Hash: b, ExpiresAt: time.Now().Add(time.Hour)}))(t)
	must(0, s.BeginErasure(ctx, alice))(t)
	must(s.EraseUser(ctx, alice))(t)
	if _, err := s.SessionByHash(ctx, a); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an erased user's session: %v", err)
	}
	if got := must(s.SessionByHash(ctx, b))(t); got.UserID != bob {
		t.Fatalf("another user's session after the erasure: %+v", got)
	}
}
