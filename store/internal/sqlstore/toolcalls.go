package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// BeginToolCall implements store.ToolCalls. The common case, a call
// never begun, is one insert; the rest (an attempt after a crash, or
// after a question) reads the earlier record in the same transaction.
func (s *Store) BeginToolCall(ctx context.Context, c store.NewToolCall) (store.ToolCall, error) {
	var prior store.ToolCall
	if err := c.Validate(); err != nil {
		return prior, s.errorf("begin tool call: %w", err)
	}
	now := s.db.Time(storeutil.Now())
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		prior = store.ToolCall{}
		n, err := q.Exec(ctx, `INSERT INTO tool_calls (id, run_id, tool, state, updated_at)
SELECT ?, id, ?, 'started', ? FROM runs WHERE id = ? ON CONFLICT (id) DO NOTHING`, c.Key, c.Tool, now, c.RunID)
		if err != nil || n == 1 {
			return err
		}
		var outcome []byte
		err = q.QueryRow(ctx, `SELECT id, run_id, tool, state, outcome, again FROM tool_calls WHERE id = ?`, c.Key).
			Scan(&prior.Key, &prior.RunID, &prior.Tool, &prior.State, &outcome, &prior.Again)
		if noRows(err) {
			return store.ErrNotFound // no such run
		}
		if err != nil {
			return err
		}
		prior.Outcome = rawJSON(outcome)
		switch {
		case prior.State == store.CallAsking:
			_, err = q.Exec(ctx, `UPDATE tool_calls SET state = 'started', updated_at = ? WHERE id = ?`, now, c.Key)
		case prior.State == store.CallStarted && c.Again != "" && c.Again != prior.Again:
			_, err = q.Exec(ctx, `UPDATE tool_calls SET again = ?, updated_at = ? WHERE id = ?`, c.Again, now, c.Key)
		default:
			return nil
		}
		prior = store.ToolCall{}
		return err
	})
	if err != nil {
		return store.ToolCall{}, s.errorf("begin tool call %s of run %s: %w", c.Key, c.RunID, err)
	}
	return prior, nil
}

// SetToolCall implements store.ToolCalls.
func (s *Store) SetToolCall(ctx context.Context, key string, state store.ToolCallState, outcome json.RawMessage) error {
	switch {
	case state != store.CallAsking && state != store.CallEnded:
		return s.errorf("set tool call %s: %w: state %q is not asking or ended", key, store.ErrInvalid, state)
	case outcome != nil && !json.Valid(outcome):
		return s.errorf("set tool call %s: %w: the outcome is not JSON", key, store.ErrInvalid)
	}
	if err := storeutil.CheckIDs(key); err != nil {
		return s.errorf("set tool call: %w", err)
	}
	var n int64
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		var err error
		n, err = q.Exec(ctx, `UPDATE tool_calls SET state = ?, outcome = ?, updated_at = ? WHERE id = ?`,
			state, nullJSON(outcome), s.db.Time(storeutil.Now()), key)
		return err
	})
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return s.errorf("set tool call %s to %s: %w", key, state, err)
	}
	return nil
}
