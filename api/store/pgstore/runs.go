package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
	"github.com/trellis-ai/trellis/internal/ids"
)

// StartRun implements store.Runs. Its first statement locks the
// conversation's row, which queues StartRuns of one conversation behind
// each other, also across processes; the unique index runs_one_active is
// the last word on whether another run is active. A new conversation is
// inserted first, in the same transaction.
func (s *Store) StartRun(ctx context.Context, nr store.NewRun) (store.Run, error) {
	if err := cmp.Or(nr.Validate(), storeutil.CheckIDs(nr.UserID, nr.ConversationID, nr.Supersedes)); err != nil {
		return store.Run{}, fmt.Errorf("pgstore: start run: %w", err)
	}
	now := storeutil.Now()
	if nr.NewConversation != nil {
		nr.ConversationID = ids.New()
	}
	r := store.Run{ID: ids.New(), ConversationID: nr.ConversationID, UserID: nr.UserID, Status: store.RunRunning,
		UserMessage: nr.UserMessage, CreatedAt: now, CheckpointID: nr.CheckpointID, RequestID: nr.RequestID, Owner: nr.Owner}
	err := s.write(ctx, func(tx pgx.Tx) error {
		if nc := nr.NewConversation; nc != nil {
			c := store.Conversation{ID: nr.ConversationID, UserID: nc.UserID, Title: nc.Title, CreatedAt: now, UpdatedAt: now}
			if err := insertConversation(ctx, tx, c); err != nil {
				return err
			}
		}
		var num int64
		err := tx.QueryRow(ctx, `UPDATE conversations SET run_count = run_count + 1, updated_at = $1
WHERE id = $2 AND user_id = $3 RETURNING run_count`, now, nr.ConversationID, nr.UserID).Scan(&num)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if nr.Supersedes != "" {
			if err := supersede(ctx, tx, nr.ConversationID, nr.Supersedes, now, &r.CheckpointID); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO runs (id, conversation_id, user_id, num, status, user_message, request_id, owner,
    checkpoint_id, created_at) VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8, $9)`,
			r.ID, r.ConversationID, r.UserID, num, r.UserMessage, r.RequestID, r.Owner, r.CheckpointID, now)
		if violates(err, "runs_one_active") {
			return store.ErrRunActive
		}
		if err != nil {
			return err
		}
		m := store.Message{ID: ids.New(), RunID: r.ID, Role: store.RoleUser, Content: r.UserMessage, CreatedAt: now}
		return addMessage(ctx, tx, &m)
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("pgstore: start run on conversation %s: %w", nr.ConversationID, err)
	}
	return r, nil
}

// supersede marks run from and every later run of the conversation
// superseded and expires what they left pending. checkpoint, if empty,
// becomes from's checkpoint.
//
// The UPDATE locks the runs it marks and reads their latest status, so a
// run that a concurrent ResumeRun set running is seen running, and
// refused; a ResumeRun coming after finds its run superseded.
func supersede(ctx context.Context, tx pgx.Tx, conversationID, from string, now time.Time, checkpoint *string) error {
	var (
		num        int64
		superseded bool
		cp         string
	)
	err := tx.QueryRow(ctx, `SELECT num, superseded, checkpoint_id FROM runs WHERE id = $1 AND conversation_id = $2`,
		from, conversationID).Scan(&num, &superseded, &cp)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("superseding run %s: %w", from, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if superseded {
		return fmt.Errorf("run %s was superseded already: %w", from, store.ErrConflict)
	}
	rows, err := tx.Query(ctx, `UPDATE runs SET superseded = true WHERE conversation_id = $1 AND num >= $2 RETURNING id, status`,
		conversationID, num)
	if err != nil {
		return err
	}
	type marked struct {
		ID     string
		Status store.RunStatus
	}
	runs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[marked])
	if err != nil {
		return err
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		if r.Status == store.RunRunning {
			return fmt.Errorf("run %s is still running; cancel it first: %w", r.ID, store.ErrRunActive)
		}
		ids[i] = r.ID
	}
	for _, table := range []string{"approvals", "elicitations"} {
		if _, err := tx.Exec(ctx, `UPDATE `+table+` SET status = 'expired', resolved_at = $1
WHERE status = 'pending' AND run_id = ANY($2)`, now, ids); err != nil {
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
		return store.Run{}, fmt.Errorf("pgstore: get run: %w", err)
	}
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE id = $1 AND user_id = $2`, runID, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("pgstore: get run %s: %w", runID, err)
	}
	return r, nil
}

// LatestRun implements store.Runs.
func (s *Store) LatestRun(ctx context.Context, userID, conversationID string) (store.Run, error) {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		return store.Run{}, fmt.Errorf("pgstore: latest run: %w", err)
	}
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runCols+` FROM runs
WHERE conversation_id = $1 AND user_id = $2 ORDER BY num DESC LIMIT 1`, conversationID, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("pgstore: latest run of conversation %s: %w", conversationID, err)
	}
	return r, nil
}

// ListRuns implements store.Runs. A run's first n events are those
// numbered 1 to n, since sequence numbers have no gaps.
func (s *Store) ListRuns(ctx context.Context, userID, conversationID string, q store.RunQuery) (store.RunPage, error) {
	page, err := s.listRuns(ctx, userID, conversationID, q)
	if err != nil {
		return store.RunPage{}, fmt.Errorf("pgstore: list runs of conversation %s: %w", conversationID, err)
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
	err = s.read(ctx, func(tx pgx.Tx) error {
		if err := ownsConversation(ctx, tx, userID, conversationID); err != nil {
			return err
		}
		// One more than the page holds tells whether another page follows.
		rows, err := tx.Query(ctx, `SELECT num, `+runCols+` FROM runs WHERE conversation_id = $1 AND num > $2
ORDER BY num LIMIT $3`, conversationID, after, size+1)
		if err != nil {
			return err
		}
		if runs, err = collect(rows, scanNumberedRun); err != nil || len(runs) == 0 {
			return err
		}
		last := runs[min(len(runs), size)-1].Num
		rows, err = tx.Query(ctx, `SELECT e.run_id, e.seq, e.type, e.data, e.created_at
FROM runs r JOIN events e ON e.run_id = r.id
WHERE r.conversation_id = $1 AND r.num > $2 AND r.num <= $3 AND e.seq <= $4 ORDER BY r.num, e.seq`,
			conversationID, after, last, events)
		if err != nil {
			return err
		}
		if evs, err = collect(rows, scanEvent); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT `+messageCols+` FROM messages m JOIN runs r ON r.id = m.run_id
WHERE r.conversation_id = $1 AND r.num > $2 AND r.num <= $3 ORDER BY r.num, m.created_at, m.id`, conversationID, after, last)
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
		return store.Run{}, fmt.Errorf("pgstore: finish run %s: %w", runID, err)
	}
	usage, err := json.Marshal(end.Usage)
	if err != nil {
		return store.Run{}, fmt.Errorf("pgstore: finish run %s: %w", runID, err)
	}
	now := storeutil.Now()
	var r store.Run
	err = s.write(ctx, func(tx pgx.Tx) error {
		var err error
		r, err = scanRun(tx.QueryRow(ctx, `UPDATE runs SET status = $1, interrupt_reason = $2, usage = $3, completed_at = $4
WHERE id = $5 AND status IN ('running', 'interrupted') AND ($6 = '' OR owner = $6) RETURNING `+runCols,
			end.Status, end.Reason, string(usage), now, runID, end.Owner))
		if errors.Is(err, pgx.ErrNoRows) {
			return runMissingOr(ctx, tx, runID, end.Owner, fmt.Errorf("run has ended: %w", store.ErrConflict))
		}
		if err != nil {
			return err
		}
		if end.Status.Final() {
			for _, table := range []string{"approvals", "elicitations"} {
				if _, err := tx.Exec(ctx, `UPDATE `+table+` SET status = 'expired', resolved_at = $1
WHERE run_id = $2 AND status = 'pending'`, now, runID); err != nil {
					return err
				}
			}
		}
		_, err = tx.Exec(ctx, `UPDATE conversations SET updated_at = $1 WHERE id = $2`, now, r.ConversationID)
		return err
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("pgstore: finish run %s as %s: %w", runID, end.Status, err)
	}
	return r, nil
}

// ResumeRun implements store.Runs.
func (s *Store) ResumeRun(ctx context.Context, runID, owner string) (store.Run, error) {
	if !store.ValidText(owner) {
		return store.Run{}, fmt.Errorf("pgstore: resume run: %w: owner is not valid UTF-8 or holds a NUL character", store.ErrInvalid)
	}
	if err := storeutil.CheckIDs(runID); err != nil {
		return store.Run{}, fmt.Errorf("pgstore: resume run: %w", err)
	}
	now := storeutil.Now()
	var r store.Run
	err := s.write(ctx, func(tx pgx.Tx) error {
		var err error
		r, err = scanRun(tx.QueryRow(ctx, `UPDATE runs SET status = 'running', interrupt_reason = '', completed_at = NULL, owner = $1
WHERE id = $2 AND status = 'interrupted' AND NOT superseded RETURNING `+runCols, owner, runID))
		if violates(err, "runs_one_active") {
			return store.ErrRunActive
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return runMissingOr(ctx, tx, runID, "", fmt.Errorf("run is not interrupted, or was superseded: %w", store.ErrConflict))
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE conversations SET updated_at = $1 WHERE id = $2`, now, r.ConversationID)
		return err
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("pgstore: resume run %s: %w", runID, err)
	}
	return r, nil
}

// runMissingOr returns ErrNotFound when the run does not exist,
// ErrNotOwner when owner is set and the run is another's, and otherwise
// err: why a conditional update of it changed nothing.
func runMissingOr(ctx context.Context, q rowQuerier, runID, owner string, err error) error {
	var stored string
	switch e := q.QueryRow(ctx, `SELECT owner FROM runs WHERE id = $1`, runID).Scan(&stored); {
	case errors.Is(e, pgx.ErrNoRows):
		return store.ErrNotFound
	case e != nil:
		return e
	case owner != "" && stored != owner:
		return store.ErrNotOwner
	}
	return err
}

// rowQuerier is a transaction or the pool.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
