package sqlstore

import (
	"cmp"
	"context"
	"fmt"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// insertMessage adds a message to its run's conversation, and none when
// the run is unknown.
const insertMessage = `
INSERT INTO messages (id, conversation_id, run_id, role, content, citations, meta, created_at)
SELECT ?, conversation_id, id, ?, ?, ?, ?, ? FROM runs WHERE id = ?`

// insertRunMessage adds a message to a run whose row the transaction
// holds (inserted, or locked), so its conversation is known and the run
// cannot go: it spares insertMessage's lookup of the run, at the start
// and the end of every turn.
const insertRunMessage = `
INSERT INTO messages (id, conversation_id, run_id, role, content, citations, meta, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

// AddMessage implements store.Conversations.
func (s *Store) AddMessage(ctx context.Context, nm store.NewMessage) (store.Message, error) {
	if err := cmp.Or(nm.Validate(), storeutil.CheckIDs(nm.RunID)); err != nil {
		return store.Message{}, s.errorf("add message: %w", err)
	}
	m := store.Message{ID: ids.New(), RunID: nm.RunID, Role: nm.Role, Content: nm.Content,
		Citations: nm.Citations, Meta: nm.Meta, CreatedAt: storeutil.Now()}
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		return s.addMessage(ctx, q, &m, s.db.Time(m.CreatedAt))
	})
	if err != nil {
		return store.Message{}, s.errorf("add message to run %s: %w", nm.RunID, err)
	}
	return m, nil
}

// insertMessageArgs are insertMessage's arguments for m, stored at at
// (DB.Time).
func insertMessageArgs(m *store.Message, at any) []any {
	return []any{m.ID, m.Role, m.Content, nullJSON(m.Citations), nullJSON(m.Meta), at, m.RunID}
}

// insertRunMessageArgs are insertRunMessage's arguments for m, of its
// conversation m.ConversationID, stored at at (DB.Time).
func insertRunMessageArgs(m *store.Message, at any) []any {
	return []any{m.ID, m.ConversationID, m.RunID, m.Role, m.Content, nullJSON(m.Citations), nullJSON(m.Meta), at}
}

// addMessage stores m, created at (DB.Time of m.CreatedAt), and fills in
// its conversation.
func (s *Store) addMessage(ctx context.Context, q Querier, m *store.Message, at any) error {
	err := q.QueryRow(ctx, insertMessage+`
RETURNING conversation_id, (SELECT superseded FROM runs WHERE id = run_id)`, insertMessageArgs(m, at)...).Scan(&m.ConversationID, &m.Superseded)
	if noRows(err) {
		return store.ErrNotFound
	}
	return s.messageGone(err)
}

// messagesOf returns the messages that events hold (NewEvent.Message),
// in the events' order, with their ids and times.
func messagesOf(nes []store.NewEvent) []store.Message {
	var out []store.Message
	for _, ne := range nes {
		if nm := ne.Message; nm != nil {
			out = append(out, store.Message{ID: ids.New(), RunID: nm.RunID, Role: nm.Role, Content: nm.Content,
				Citations: nm.Citations, Meta: nm.Meta, CreatedAt: storeutil.Now()})
		}
	}
	return out
}

// addMessagesLater stores ms with q, each held (see execLater) to go with
// q's next statement, which must fail when their run is gone, as the
// events' append does: a message whose run is gone inserts nothing. When
// the transaction holds their run's row, conversation is its
// conversation, and the run is not looked up.
func (s *Store) addMessagesLater(ctx context.Context, q Querier, ms []store.Message, conversation string) error {
	for i := range ms {
		m, at := &ms[i], s.db.Time(ms[i].CreatedAt)
		var err error
		if conversation == "" {
			err = execLater(ctx, q, insertMessage, insertMessageArgs(m, at)...)
		} else {
			m.ConversationID = conversation
			err = execLater(ctx, q, insertRunMessage, insertRunMessageArgs(m, at)...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// messageGone is err, or ErrNotFound when it is a message's foreign key
// failing: its conversation was deleted meanwhile.
func (s *Store) messageGone(err error) error {
	if s.db.Violates(err, "messages_run_id_fkey") || s.db.Violates(err, "messages_conversation_id_fkey") {
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	return err
}

// RunMessages implements store.Conversations.
func (s *Store) RunMessages(ctx context.Context, userID, runID string) ([]store.Message, error) {
	if err := storeutil.CheckIDs(userID, runID); err != nil {
		return nil, s.errorf("messages of run: %w", err)
	}
	var out []store.Message
	err := s.db.Read(ctx, func(q Querier) error {
		err := owned(ctx, q, "runs", userID, runID)
		if err != nil {
			return err
		}
		out, err = queryAll(ctx, q, scanMessage, `SELECT `+messageCols+` FROM messages m JOIN runs r ON r.id = m.run_id
WHERE m.run_id = ? ORDER BY m.created_at, m.id`, runID)
		return err
	})
	if err != nil {
		return nil, s.errorf("messages of run %s: %w", runID, err)
	}
	return out, nil
}
