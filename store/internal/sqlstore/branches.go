package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// branchPath names, as the table path (id, parent_id), the runs of a
// run's branch: those the run follows, itself, and those that follow it
// up to the branch's last run, the active one's below a run on the
// active branch, else the newest (store.Branch.HeadRunID). Its
// arguments are the run and its conversation, twice.
const branchPath = `WITH RECURSIVE below(id, num, superseded) AS (
    SELECT id, num, superseded FROM runs WHERE id = ? AND conversation_id = ?
    UNION ALL
    SELECT n.id, n.num, n.superseded FROM runs n JOIN below b ON n.parent_id = b.id WHERE n.conversation_id = ?
), head(id) AS (SELECT id FROM below ORDER BY superseded, num DESC LIMIT 1),
path(id, parent_id) AS (
    SELECT id, parent_id FROM runs WHERE id = (SELECT id FROM head)
    UNION ALL
    SELECT n.id, n.parent_id FROM runs n JOIN path p ON n.id = p.parent_id
)
`

// qualified prefixes each of the comma-separated columns cols with the
// table alias t.
func qualified(t, cols string) string {
	fields := strings.Split(cols, ",")
	for i, f := range fields {
		fields[i] = t + "." + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}

// scanListedRun reads num, RunCols, then how many versions the run's
// turn has and the run's place among them (store.Versions), set when
// there are several.
func scanListedRun(row Row) (storeutil.NumberedRun, error) {
	var (
		r     storeutil.NumberedRun
		v     store.Versions
		err   error
		extra = []any{&v.Count, &v.Index}
	)
	r.Run, err = ScanRun(aroundCols{row: row, before: []any{&r.Num}, after: extra})
	if v.Count > 1 {
		r.Versions = &v
	}
	return r, err
}

// aroundCols scans a row's first columns into before, its last into
// after, and those between into what Scan is given.
type aroundCols struct {
	row           Row
	before, after []any
}

func (a aroundCols) Scan(dest ...any) error {
	return a.row.Scan(slices.Concat(a.before, dest, a.after)...)
}

// runOf returns ErrNotFound unless run runID is of the conversation.
func runOf(ctx context.Context, q Querier, conversationID, runID string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = ? AND conversation_id = ?`, runID, conversationID).Scan(&one)
	if noRows(err) {
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	return err
}

// Branches implements store.Runs.
func (s *Store) Branches(ctx context.Context, userID, runID string) ([]store.Branch, error) {
	if err := storeutil.CheckIDs(userID, runID); err != nil {
		return nil, s.errorf("branches: %w", err)
	}
	var out []store.Branch
	err := s.db.Read(ctx, func(q Querier) error {
		var conversationID, parentID string
		err := q.QueryRow(ctx, `SELECT conversation_id, parent_id FROM runs WHERE id = ? AND user_id = ?`, runID, userID).
			Scan(&conversationID, &parentID)
		if noRows(err) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		// Each version's runs below it, and of them the branch's last.
		out, err = queryAll(ctx, q, scanBranch, `WITH RECURSIVE below(root, id, num, superseded) AS (
    SELECT id, id, num, superseded FROM runs WHERE conversation_id = ? AND parent_id = ?
    UNION ALL
    SELECT b.root, n.id, n.num, n.superseded FROM runs n JOIN below b ON n.parent_id = b.id WHERE n.conversation_id = ?
), heads AS (
    SELECT root, id, row_number() OVER (PARTITION BY root ORDER BY superseded, num DESC) AS rank FROM below
)
SELECT v.id, v.user_message, v.status, v.created_at, v.superseded, h.id
FROM runs v JOIN heads h ON h.root = v.id AND h.rank = 1
ORDER BY v.num`, conversationID, parentID, conversationID)
		return err
	})
	if err != nil {
		return nil, s.errorf("branches at run %s: %w", runID, err)
	}
	return out, nil
}

// scanBranch scans a row of Branches' query.
func scanBranch(row Row) (store.Branch, error) {
	var (
		b          store.Branch
		created    dbTime
		superseded bool
	)
	err := row.Scan(&b.RunID, &b.UserMessage, &b.Status, &created, &superseded, &b.HeadRunID)
	b.CreatedAt, b.Active = created.t, !superseded
	return b, err
}

// SetBranch implements store.Runs. It locks the conversation's row first,
// as StartRun does, so the two queue behind each other.
func (s *Store) SetBranch(ctx context.Context, userID, runID string) (store.Run, error) {
	if err := storeutil.CheckIDs(userID, runID); err != nil {
		return store.Run{}, s.errorf("set branch: %w", err)
	}
	now := s.db.Time(storeutil.Now())
	var head store.Run
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		var conversationID string
		err := q.QueryRow(ctx, `UPDATE conversations SET run_count = run_count
WHERE id = (SELECT conversation_id FROM runs WHERE id = ? AND user_id = ?) RETURNING id`, runID, userID).Scan(&conversationID)
		if noRows(err) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		var active string
		err = q.QueryRow(ctx, `SELECT id FROM runs WHERE conversation_id = ? AND NOT superseded
    AND (status = 'running' OR (status = 'interrupted' AND interrupt_reason <> 'clarification'))`, conversationID).Scan(&active)
		if err == nil {
			return fmt.Errorf("run %s is active; cancel it or wait for its end: %w", active, store.ErrRunActive)
		}
		if !noRows(err) {
			return err
		}
		args := []any{runID, conversationID, conversationID}
		if head, err = ScanRun(q.QueryRow(ctx, branchPath+`SELECT `+RunCols+` FROM runs WHERE id = (SELECT id FROM head)`, args...)); err != nil {
			return err
		}
		if head.Status == store.RunInterrupted && head.InterruptReason != events.PendingClarification {
			return fmt.Errorf("the branch's last run %s waited on a %s that expired when the branch was left; edit its message instead: %w",
				head.ID, head.InterruptReason, store.ErrConflict)
		}
		// What the runs leaving the active branch left pending expires,
		// as for runs an edit supersedes.
		for _, table := range humanTables {
			if _, err := q.Exec(ctx, branchPath+`UPDATE `+table+` SET status = 'expired', resolved_at = ?
WHERE status = 'pending' AND run_id IN (SELECT id FROM runs WHERE conversation_id = ? AND NOT superseded AND id NOT IN (SELECT id FROM path))`,
				append(args, now, conversationID)...); err != nil {
				return err
			}
		}
		_, err = q.Exec(ctx, branchPath+`UPDATE runs SET superseded = (id NOT IN (SELECT id FROM path))
WHERE conversation_id = ? AND superseded = (id IN (SELECT id FROM path))`, append(args, conversationID)...)
		head.Superseded = false
		return err
	})
	if err != nil {
		return store.Run{}, s.errorf("set the branch of run %s: %w", runID, err)
	}
	return head, nil
}
