package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// queuedCols are a queued_runs row's columns as scanQueued reads them,
// with its position in its queue (q is the row).
const queuedCols = `q.id, q.conversation_id, q.user_id, q.user_message, q.request_id, q.created_at,
    (SELECT count(*) FROM queued_runs p WHERE p.conversation_id = q.conversation_id AND p.seq <= q.seq)`

func scanQueued(row Row) (store.QueuedRun, error) {
	var (
		qr store.QueuedRun
		at dbTime
	)
	err := row.Scan(&qr.ID, &qr.ConversationID, &qr.UserID, &qr.UserMessage, &qr.RequestID, &at, &qr.Position)
	qr.CreatedAt = at.t
	return qr, err
}

// EnqueueRun implements store.Queue.
func (s *Store) EnqueueRun(ctx context.Context, nq store.NewQueuedRun) (store.QueuedRun, error) {
	if err := nq.Validate(); err != nil {
		return store.QueuedRun{}, s.errorf("enqueue run: %w", err)
	}
	if err := storeutil.CheckIDs(nq.UserID, nq.ConversationID); err != nil {
		return store.QueuedRun{}, s.errorf("enqueue run: %w", err)
	}
	id := ids.New()
	var qr store.QueuedRun
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		if err := s.takesWrites(ctx, q, nq.UserID, nq.ConversationID); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `INSERT INTO queued_runs (id, conversation_id, user_id, user_message, request_id, input, created_at, model)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, nq.ConversationID, nq.UserID, nq.UserMessage, nq.RequestID, string(nq.Input),
			s.db.Time(storeutil.Now()), nq.Model); err != nil {
			return err
		}
		var err error
		qr, err = scanQueued(q.QueryRow(ctx, `SELECT `+queuedCols+` FROM queued_runs q WHERE q.id = ?`, id))
		return err
	})
	if err != nil {
		return store.QueuedRun{}, s.errorf("enqueue run on conversation %s: %w", nq.ConversationID, s.refused(err))
	}
	return qr, nil
}

// QueuedRuns implements store.Queue.
func (s *Store) QueuedRuns(ctx context.Context, userID, conversationID string) ([]store.QueuedRun, error) {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		return nil, s.errorf("queued runs: %w", err)
	}
	var out []store.QueuedRun
	err := s.db.Read(ctx, func(q Querier) error {
		if err := ownsConversation(ctx, q, userID, conversationID); err != nil {
			return err
		}
		var err error
		out, err = queryAll(ctx, q, scanQueued, `SELECT `+queuedCols+` FROM queued_runs q WHERE q.conversation_id = ? ORDER BY q.seq`, conversationID)
		return err
	})
	if err != nil {
		return nil, s.errorf("queued runs of conversation %s: %w", conversationID, err)
	}
	return out, nil
}

// GetQueuedRun implements store.Queue.
func (s *Store) GetQueuedRun(ctx context.Context, userID, id string) (store.QueuedRun, error) {
	if err := storeutil.CheckIDs(userID, id); err != nil {
		return store.QueuedRun{}, s.errorf("get queued run: %w", err)
	}
	qr, err := scanQueued(s.db.QueryRow(ctx, `SELECT `+queuedCols+` FROM queued_runs q WHERE q.id = ? AND q.user_id = ?`, id, userID))
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.QueuedRun{}, s.errorf("get queued run %s: %w", id, err)
	}
	return qr, nil
}

// CancelQueuedRun implements store.Queue.
func (s *Store) CancelQueuedRun(ctx context.Context, userID, id string) error {
	if err := storeutil.CheckIDs(userID, id); err != nil {
		return s.errorf("cancel queued run: %w", err)
	}
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		return changesOne(ctx, q, `DELETE FROM queued_runs WHERE id = ? AND user_id = ?`, id, userID)
	})
	if err != nil {
		return s.errorf("cancel queued run %s: %w", id, err)
	}
	return nil
}

// DropQueuedRuns implements store.Queue.
func (s *Store) DropQueuedRuns(ctx context.Context, userID, conversationID string) error {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		return s.errorf("drop queued runs: %w", err)
	}
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		if err := ownsConversation(ctx, q, userID, conversationID); err != nil {
			return err
		}
		_, err := q.Exec(ctx, `DELETE FROM queued_runs WHERE conversation_id = ?`, conversationID)
		return err
	})
	if err != nil {
		return s.errorf("drop queued runs of conversation %s: %w", conversationID, err)
	}
	return nil
}

// StartQueuedRun implements store.Queue. The DELETE that takes the
// message out of the queue is its first write: of two transactions
// starting one message, the second finds it gone.
func (s *Store) StartQueuedRun(ctx context.Context, conversationID, owner string) (store.Run, error) {
	if err := storeutil.CheckIDs(conversationID); err != nil {
		return store.Run{}, s.errorf("start queued run: %w", err)
	}
	var r store.Run
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		var (
			id    string
			nr    store.NewRun
			input string
		)
		err := q.QueryRow(ctx, `DELETE FROM queued_runs WHERE seq = (SELECT min(seq) FROM queued_runs WHERE conversation_id = ?)
RETURNING id, user_id, user_message, request_id, input, model`, conversationID).Scan(&id, &nr.UserID, &nr.UserMessage, &nr.RequestID, &input, &nr.Model)
		if noRows(err) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		nr.ConversationID, nr.Owner, nr.Input = conversationID, owner, json.RawMessage(input)
		r, err = s.startRun(ctx, q, id, nr)
		return err
	})
	if err != nil {
		return store.Run{}, s.errorf("start the queued run of conversation %s: %w", conversationID, s.started(err))
	}
	return r, nil
}

// IdleQueues implements store.Queue.
func (s *Store) IdleQueues(ctx context.Context, limit int) ([]store.QueuedRun, error) {
	size, err := store.Page{Limit: limit}.Size()
	if err != nil {
		return nil, s.errorf("idle queues: %w", err)
	}
	if limit == 0 {
		size = store.MaxLimit
	}
	out, err := queryAll(ctx, s.db, scanQueued, `SELECT `+queuedCols+` FROM queued_runs q
WHERE q.seq = (SELECT min(seq) FROM queued_runs f WHERE f.conversation_id = q.conversation_id)
  AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.conversation_id = q.conversation_id AND NOT runs.superseded
      AND (runs.status = 'running' OR (runs.status = 'interrupted' AND runs.interrupt_reason <> 'clarification')))
ORDER BY q.seq LIMIT ?`, size)
	if err != nil {
		return nil, s.errorf("idle queues: %w", err)
	}
	return out, nil
}
