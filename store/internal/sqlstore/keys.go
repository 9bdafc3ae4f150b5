package sqlstore

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// keyCols are read by scanKey.
const keyCols = `k.id, k.user_id, k.name, k.prefix, k.created_at, k.revoked_at`

func scanKey(row Row) (store.Key, error) {
	var (
		k                store.Key
		created, revoked dbTime
	)
	if err := row.Scan(&k.ID, &k.UserID, &k.Name, &k.Prefix, &created, &revoked); err != nil {
		return k, err
	}
	k.CreatedAt, k.RevokedAt = created.t, revoked.ptr()
	return k, nil
}

// CreateKey implements store.Keys.
func (s *Store) CreateKey(ctx context.Context, nk store.NewKey) (store.Key, error) {
	if err := nk.Validate(); err != nil {
		return store.Key{}, s.errorf("create key: %w", err)
	}
	k := store.Key{ID: ids.New(), UserID: nk.UserID, Name: nk.Name, Prefix: nk.Prefix, CreatedAt: storeutil.Now()}
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		n, err := q.Exec(ctx, `INSERT INTO api_keys (id, user_id, name, prefix, hash, created_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (hash) DO NOTHING`, k.ID, k.UserID, k.Name, k.Prefix, nk.Hash[:], s.db.Time(k.CreatedAt))
		if err == nil && n == 0 {
			err = fmt.Errorf("the key is stored already: %w", store.ErrConflict)
		}
		return err
	})
	if err != nil {
		return store.Key{}, s.errorf("create key: %w", err)
	}
	return k, nil
}

// KeyUser implements store.Keys.
func (s *Store) KeyUser(ctx context.Context, hash [sha256.Size]byte) (string, error) {
	var user string
	err := s.db.QueryRow(ctx, `SELECT user_id FROM api_keys WHERE hash = ? AND revoked_at IS NULL`, hash[:]).Scan(&user)
	if noRows(err) {
		return "", s.errorf("key user: %w", store.ErrNotFound)
	}
	if err != nil {
		return "", s.errorf("key user: %w", err)
	}
	return user, nil
}

// ListKeys implements store.Keys.
func (s *Store) ListKeys(ctx context.Context, userID string, page store.Page) (store.KeyPage, error) {
	if _, _, _, err := checkPage(page); err != nil {
		return store.KeyPage{}, s.errorf("list keys: %w", err)
	}
	if storeutil.CheckIDs(userID) != nil {
		return store.KeyPage{Keys: []store.Key{}}, nil // no such user
	}
	k := keyed{sel: `SELECT ` + keyCols + ` FROM api_keys k`, alias: "k", where: `1 = 1`}
	if userID != "" {
		k.where, k.args = `k.user_id = ?`, []any{userID}
	}
	items, next, err := readPage(ctx, s, s.db, k, page, scanKey,
		func(k store.Key) storeutil.Cursor { return storeutil.Cursor{CreatedAt: k.CreatedAt, ID: k.ID} },
		func(k store.Key) int { return len(k.UserID) + len(k.Name) + len(k.Prefix) })
	if err != nil {
		return store.KeyPage{}, s.errorf("list keys: %w", err)
	}
	return store.KeyPage{Keys: items, NextCursor: next}, nil
}

// RevokeKey implements store.Keys.
func (s *Store) RevokeKey(ctx context.Context, id string) (store.Key, error) {
	var k store.Key
	if storeutil.CheckIDs(id) != nil {
		return k, s.errorf("revoke key: %w", store.ErrNotFound)
	}
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		if _, err := q.Exec(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`,
			s.db.Time(storeutil.Now()), id); err != nil {
			return err
		}
		var err error
		k, err = scanKey(q.QueryRow(ctx, `SELECT `+keyCols+` FROM api_keys k WHERE k.id = ?`, id))
		if noRows(err) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.Key{}, s.errorf("revoke key %s: %w", id, err)
	}
	return k, nil
}

// HasKeys implements store.Keys.
func (s *Store) HasKeys(ctx context.Context) (bool, error) {
	var n int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM api_keys WHERE revoked_at IS NULL LIMIT 1) live`).Scan(&n); err != nil {
		return false, s.errorf("has keys: %w", err)
	}
	return n > 0, nil
}
