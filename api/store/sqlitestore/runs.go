package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
	"github.com/trellis-ai/trellis/internal/ids"
)

// StartRun implements store.Runs. The transaction holds the write lock
// from its first statement, so its checks and writes see and leave one
// state; the unique index runs_one_active is the last word on whether
// another run is active. A new conversation is inserted in it too.
func (s *Store) StartRun(ctx context.Context, nr store.NewRun) (store.Run, error) {
	if err := cmp.Or(nr.Validate(), storeutil.CheckIDs(nr.UserID, nr.ConversationID, nr.Supersedes)); err != nil {
		return store.Run{}, fmt.Errorf("sqlitestore: start run: %w", err)
	}
	now := storeutil.Now()
	if nr.NewConversation != nil {
		nr.ConversationID = ids.New()
	}
	r := store.Run{ID: ids.New(), ConversationID: nr.ConversationID, UserID: nr.UserID, Status: store.RunRunning,
		UserMessage: nr.UserMessage, CreatedAt: now, CheckpointID: nr.CheckpointID, RequestID: nr.RequestID, Owner: nr.Owner}
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		if nc := nr.NewConversation; nc != nil {
			c := store.Conversation{ID: nr.ConversationID, UserID: nc.UserID, Title: nc.Title, CreatedAt: now, UpdatedAt: now}
			if err := insertConversation(ctx, tx, c); err != nil {
				return err
			}
		}
		var num int64
		err := tx.QueryRowContext(ctx, `UPDATE conversations SET run_count = run_count + 1, updated_at = ?
WHERE id = ? AND user_id = ? RETURNING run_count`, formatTime(now), nr.ConversationID, nr.UserID).Scan(&num)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if nr.Supersedes != "" {
			if err := supersede(ctx, tx, nr.ConversationID, nr.Supersedes, formatTime(now), &r.CheckpointID); err != nil {
				return err
			}
		}
		usage, _ := json.Marshal(r.Usage)
		_, err = tx.ExecContext(ctx, `INSERT INTO runs (id, conversation_id, user_id, num, status, user_message, usage,
    request_id, owner, checkpoint_id, created_at) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)`,
			r.ID, r.ConversationID, r.UserID, num, r.UserMessage, string(usage), r.RequestID, r.Owner, r.CheckpointID, formatTime(now))
		if isUnique(err, "runs.conversation_id") {
			return store.ErrRunActive
		}
		if err != nil {
			return err
		}
		m := store.Message{ID: ids.New(), RunID: r.ID, Role: store.RoleUser, Content: r.UserMessage, CreatedAt: now}
		return addMessage(ctx, tx, &m)
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlitestore: start run on conversation %s: %w", nr.ConversationID, err)
	}
	return r, nil
}

// supersede marks run from and every later run of the conversation
// superseded and expires what they left pending. checkpoint, if empty,
// becomes from's checkpoint.
func supersede(ctx context.Context, tx *txn, conversationID, from, now string, checkpoint *string) error {
	var (
		num        int64
		superseded bool
		cp         string
	)
	err := tx.QueryRowContext(ctx, `SELECT num, superseded, checkpoint_id FROM runs WHERE id = ? AND conversation_id = ?`,
		from, conversationID).Scan(&num, &superseded, &cp)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("superseding run %s: %w", from, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if superseded {
		return fmt.Errorf("run %s was superseded already: %w", from, store.ErrConflict)
	}
	var running string
	err = tx.QueryRowContext(ctx, `SELECT id FROM runs WHERE conversation_id = ? AND num >= ? AND status = 'running' LIMIT 1`,
		conversationID, num).Scan(&running)
	if err == nil {
		return fmt.Errorf("run %s is still running; cancel it first: %w", running, store.ErrRunActive)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET superseded = 1 WHERE conversation_id = ? AND num >= ?`,
		conversationID, num); err != nil {
		return err
	}
	for _, table := range []string{"approvals", "elicitations"} {
		if _, err := tx.ExecContext(ctx, `UPDATE `+table+` SET status = 'expired', resolved_at = ?
WHERE status = 'pending' AND run_id IN (SELECT id FROM runs WHERE conversation_id = ? AND num >= ?)`,
			now, conversationID, num); err != nil {
			return err
		}
	}
	if *checkpoint == "" {
		*checkpoint = cp
	}
	return nil
}

// GetRun implements store.Runs.
func (s *Store) GetRun(ctx context.Context, userID, runID string) (store.Run, error) {
	if err := storeutil.CheckIDs(userID, runID); err != nil {
		return store.Run{}, fmt.Errorf("sqlitestore: get run: %w", err)
	}
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ? AND user_id = ?`, runID, userID))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlitestore: get run %s: %w", runID, err)
	}
	return r, nil
}

// LatestRun implements store.Runs.
func (s *Store) LatestRun(ctx context.Context, userID, conversationID string) (store.Run, error) {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		return store.Run{}, fmt.Errorf("sqlitestore: latest run: %w", err)
	}
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs
WHERE conversation_id = ? AND user_id = ? ORDER BY num DESC LIMIT 1`, conversationID, userID))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlitestore: latest run of conversation %s: %w", conversationID, err)
	}
	return r, nil
}

// ListRuns implements store.Runs. A run's first n events are those
// numbered 1 to n, since sequence numbers have no gaps.
func (s *Store) ListRuns(ctx context.Context, userID, conversationID string, q store.RunQuery) (store.RunPage, error) {
	page, err := s.listRuns(ctx, userID, conversationID, q)
	if err != nil {
		return store.RunPage{}, fmt.Errorf("sqlitestore: list runs of conversation %s: %w", conversationID, err)
	}
	return page, nil
}

func (s *Store) listRuns(ctx context.Context, userID, conversationID string, q store.RunQuery) (store.RunPage, error) {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		return store.RunPage{}, err
	}
	size, after, events, err := storeutil.RunQueryOf(q)
	if err != nil {
		return store.RunPage{}, err
	}
	var (
		runs []storeutil.NumberedRun
		evs  []store.Event
		msgs []store.Message
	)
	err = s.read(ctx, func(tx *txn) error {
		if err := ownsConversation(ctx, tx, userID, conversationID); err != nil {
			return err
		}
		// One more than the page holds tells whether another page follows.
		rows, err := tx.QueryContext(ctx, `SELECT num, `+runCols+` FROM runs WHERE conversation_id = ? AND num > ?
ORDER BY num LIMIT ?`, conversationID, after, size+1)
		if err != nil {
			return err
		}
		if runs, err = collect(rows, scanNumberedRun); err != nil || len(runs) == 0 {
			return err
		}
		last := runs[min(len(runs), size)-1].Num
		rows, err = tx.QueryContext(ctx, `SELECT e.run_id, e.seq, e.type, e.data, e.created_at
FROM runs r JOIN events e ON e.run_id = r.id
WHERE r.conversation_id = ? AND r.num > ? AND r.num <= ? AND e.seq <= ? ORDER BY r.num, e.seq`,
			conversationID, after, last, events)
		if err != nil {
			return err
		}
		if evs, err = collect(rows, scanEvent); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `SELECT `+messageCols+` FROM messages m JOIN runs r ON r.id = m.run_id
WHERE r.conversation_id = ? AND r.num > ? AND r.num <= ? ORDER BY r.num, m.created_at, m.id`, conversationID, after, last)
		if err != nil {
			return err
		}
		msgs, err = collect(rows, scanMessage)
		return err
	})
	if err != nil {
		return store.RunPage{}, err
	}
	return storeutil.RunPage(runs, size, evs, msgs), nil
}

// FinishRun implements store.Runs.
func (s *Store) FinishRun(ctx context.Context, runID string, end store.RunEnd) (store.Run, error) {
	if err := cmp.Or(end.Validate(), storeutil.CheckIDs(runID)); err != nil {
		return store.Run{}, fmt.Errorf("sqlitestore: finish run %s: %w", runID, err)
	}
	usage, err := json.Marshal(end.Usage)
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlitestore: finish run %s: %w", runID, err)
	}
	now := formatTime(storeutil.Now())
	var r store.Run
	err = s.write(ctx, func(ctx context.Context, tx *txn) error {
		var err error
		r, err = scanRun(tx.QueryRowContext(ctx, `UPDATE runs SET status = ?, interrupt_reason = ?, usage = ?, completed_at = ?
WHERE id = ? AND status IN ('running', 'interrupted') AND (? = '' OR owner = ?) RETURNING `+runCols,
			end.Status, end.Reason, string(usage), now, runID, end.Owner, end.Owner))
		if errors.Is(err, sql.ErrNoRows) {
			return runMissingOr(ctx, tx, runID, end.Owner, fmt.Errorf("run has ended: %w", store.ErrConflict))
		}
		if err != nil {
			return err
		}
		if end.Status.Final() {
			for _, table := range []string{"approvals", "elicitations"} {
				if _, err := tx.ExecContext(ctx, `UPDATE `+table+` SET status = 'expired', resolved_at = ?
WHERE run_id = ? AND status = 'pending'`, now, runID); err != nil {
					return err
				}
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE conversations SET updated_at = ? WHERE id = ?`, now, r.ConversationID)
		return err
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlitestore: finish run %s as %s: %w", runID, end.Status, err)
	}
	return r, nil
}

// ResumeRun implements store.Runs.
func (s *Store) ResumeRun(ctx context.Context, runID, owner string) (store.Run, error) {
	if !store.ValidText(owner) {
		return store.Run{}, fmt.Errorf("sqlitestore: resume run: %w: owner is not valid UTF-8 or holds a NUL character", store.ErrInvalid)
	}
	if err := storeutil.CheckIDs(runID); err != nil {
		return store.Run{}, fmt.Errorf("sqlitestore: resume run: %w", err)
	}
	now := formatTime(storeutil.Now())
	var r store.Run
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		var err error
		r, err = scanRun(tx.QueryRowContext(ctx, `UPDATE runs SET status = 'running', interrupt_reason = '', completed_at = NULL, owner = ?
WHERE id = ? AND status = 'interrupted' AND superseded = 0 RETURNING `+runCols, owner, runID))
		if isUnique(err, "runs.conversation_id") {
			return store.ErrRunActive
		}
		if errors.Is(err, sql.ErrNoRows) {
			return runMissingOr(ctx, tx, runID, "", fmt.Errorf("run is not interrupted, or was superseded: %w", store.ErrConflict))
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE conversations SET updated_at = ? WHERE id = ?`, now, r.ConversationID)
		return err
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlitestore: resume run %s: %w", runID, err)
	}
	return r, nil
}

// runMissingOr returns ErrNotFound when the run does not exist,
// ErrNotOwner when owner is set and the run is another's, and otherwise
// err: why a conditional update of it changed nothing.
func runMissingOr(ctx context.Context, tx *txn, runID, owner string, err error) error {
	var stored string
	switch e := tx.QueryRowContext(ctx, `SELECT owner FROM runs WHERE id = ?`, runID).Scan(&stored); {
	case errors.Is(e, sql.ErrNoRows):
		return store.ErrNotFound
	case e != nil:
		return e
	case owner != "" && stored != owner:
		return store.ErrNotOwner
	}
	return err
}
