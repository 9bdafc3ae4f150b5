package sqlstore

import (
	"context"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// newestFirst reads one page of a user's rows of a table, newest first
// and keyed by (created_at, id) as the page's cursor says. sel is
// "SELECT <cols> FROM <table> <alias>"; key gives a row's cursor. It asks
// for one row more than the page holds, to tell whether another follows,
// and returns the page's rows (never nil) and the next page's cursor.
// size gives a row's bytes: the page stops early at store.PageBytes.
func newestFirst[T any](ctx context.Context, s *Store, sel, alias, userID string, page store.Page,
	scan func(Row) (T, error), key func(T) storeutil.Cursor, size func(T) int) ([]T, string, error) {
	most, err := page.Size()
	if err != nil {
		return nil, "", err
	}
	cur, after, err := storeutil.DecodeCursor(page.Cursor)
	if err != nil {
		return nil, "", err
	}
	if storeutil.CheckIDs(userID) != nil {
		return []T{}, "", nil // no such user
	}
	query := sel + ` WHERE ` + alias + `.user_id = ?`
	args := []any{userID}
	if after {
		query += ` AND (` + alias + `.created_at, ` + alias + `.id) < (?, ?)`
		args = append(args, s.db.Time(cur.CreatedAt), cur.ID)
	}
	query += ` ORDER BY ` + alias + `.created_at DESC, ` + alias + `.id DESC LIMIT ?`
	args = append(args, most+1)
	rows, err := s.db.Query(ctx, query, args...)
	if err != nil {
		return nil, "", err
	}
	items, cut, err := CollectBudget(rows, scan, size, store.PageBytes)
	switch {
	case err != nil:
		return nil, "", err
	case len(items) > most:
		items = items[:most]
	case !cut:
		return items, "", nil
	}
	return items, key(items[len(items)-1]).Encode(), nil
}
