package sqlstore

import (
	"context"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// keyed names the rows a page is read from, ordered and keyed by
// (created_at, id) of alias as the page's cursor says: sel is
// "SELECT <cols> FROM <table> <alias>", where their condition with its
// args; oldest orders them oldest first, else newest first.
type keyed struct {
	sel, alias, where string
	args              []any
	oldest            bool
}

// readPage reads one page of k's rows in q. It asks for one row more
// than the page holds, to tell whether another follows, and returns the
// page's rows (never nil) and the next page's cursor. size gives a row's
// bytes: the page stops early where store.Budget says. Page and cursor
// are checked before anything is read (ErrInvalid).
func readPage[T any](ctx context.Context, s *Store, q Querier, k keyed, page store.Page,
	scan func(Row) (T, error), key func(T) storeutil.Cursor, size func(T) int) ([]T, string, error) {
	most, cur, after, err := checkPage(page)
	if err != nil {
		return nil, "", err
	}
	query, args := k.sel+` WHERE `+k.where, k.args
	order, cmp := ` DESC`, `<`
	if k.oldest {
		order, cmp = ``, `>`
	}
	if after {
		query += ` AND (` + k.alias + `.created_at, ` + k.alias + `.id) ` + cmp + ` (?, ?)`
		args = append(args[:len(args):len(args)], s.db.Time(cur.CreatedAt), cur.ID)
	}
	query += ` ORDER BY ` + k.alias + `.created_at` + order + `, ` + k.alias + `.id` + order + ` LIMIT ?`
	args = append(args[:len(args):len(args)], most+1)
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, "", err
	}
	items, cut, err := CollectBudget(rows, scan, size)
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

// checkPage returns the most items page holds and where it starts, or
// an ErrInvalid error.
func checkPage(page store.Page) (most int, cur storeutil.Cursor, after bool, err error) {
	if most, err = page.Size(); err != nil {
		return 0, cur, false, err
	}
	cur, after, err = storeutil.DecodeCursor(page.Cursor)
	return most, cur, after, err
}

// newestFirst reads one page of a user's rows of a table, newest first
// (see readPage).
func newestFirst[T any](ctx context.Context, s *Store, sel, alias, userID string, page store.Page,
	scan func(Row) (T, error), key func(T) storeutil.Cursor, size func(T) int) ([]T, string, error) {
	if _, _, _, err := checkPage(page); err != nil {
		return nil, "", err
	}
	if storeutil.CheckIDs(userID) != nil {
		return []T{}, "", nil // no such user
	}
	return readPage(ctx, s, s.db, keyed{sel: sel, alias: alias, where: alias + `.user_id = ?`, args: []any{userID}},
		page, scan, key, size)
}
