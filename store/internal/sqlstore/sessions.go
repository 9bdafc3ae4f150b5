package sqlstore

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// CreateSession implements store.Sessions.
func (s *Store) CreateSession(ctx context.Context, ns store.NewSession) (store.Session, error) {
	now := storeutil.Now()
	if err := ns.Validate(now); err != nil {
		return store.Session{}, s.errorf("create session: %w", err)
	}
	sess := store.Session{UserID: ns.UserID, CreatedAt: now, ExpiresAt: ns.ExpiresAt.UTC().Truncate(time.Microsecond), LastSeenAt: now}
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		n, err := q.Exec(ctx, `INSERT INTO sessions (hash, user_id, created_at, expires_at, last_seen_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (hash) DO NOTHING`, ns.Hash[:], sess.UserID, s.db.Time(now), s.db.Time(sess.ExpiresAt), s.db.Time(now))
		if err == nil && n == 0 {
			err = fmt.Errorf("the session is stored already: %w", store.ErrConflict)
		}
		return err
	})
	if err != nil {
		return store.Session{}, s.errorf("create session: %w", err)
	}
	return sess, nil
}

// SessionByHash implements store.Sessions.
func (s *Store) SessionByHash(ctx context.Context, hash [sha256.Size]byte) (store.Session, error) {
	var (
		sess                   store.Session
		created, expires, seen dbTime
	)
	now := storeutil.Now()
	err := s.db.QueryRow(ctx, `SELECT user_id, created_at, expires_at, last_seen_at FROM sessions WHERE hash = ? AND expires_at > ?`,
		hash[:], s.db.Time(now)).Scan(&sess.UserID, &created, &expires, &seen)
	if noRows(err) {
		return sess, s.errorf("session: %w", store.ErrNotFound)
	}
	if err != nil {
		return sess, s.errorf("session: %w", err)
	}
	sess.CreatedAt, sess.ExpiresAt, sess.LastSeenAt = created.t, expires.t, seen.t
	if now.Sub(sess.LastSeenAt) < store.SessionSeenEvery {
		return sess, nil
	}
	err = s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		_, err := q.Exec(ctx, `UPDATE sessions SET last_seen_at = ? WHERE hash = ?`, s.db.Time(now), hash[:])
		return err
	})
	if err != nil {
		return sess, s.errorf("session: mark seen: %w", err)
	}
	sess.LastSeenAt = now
	return sess, nil
}

// DeleteSession implements store.Sessions.
func (s *Store) DeleteSession(ctx context.Context, hash [sha256.Size]byte) error {
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		_, err := q.Exec(ctx, `DELETE FROM sessions WHERE hash = ?`, hash[:])
		return err
	})
	if err != nil {
		return s.errorf("delete session: %w", err)
	}
	return nil
}

// DeleteExpiredSessions implements store.Sessions.
func (s *Store) DeleteExpiredSessions(ctx context.Context) (int, error) {
	var n int64
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		var err error
		n, err = q.Exec(ctx, `DELETE FROM sessions WHERE expires_at <= ?`, s.db.Time(storeutil.Now()))
		return err
	})
	if err != nil {
		return 0, s.errorf("delete expired sessions: %w", err)
	}
	return int(n), nil
}
