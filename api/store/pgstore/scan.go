package pgstore

import (
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
)

// conversationCols are read by scanConversation; status is the latest
// run's.
const conversationCols = `c.id, c.user_id, c.title, c.created_at, c.updated_at,
    coalesce((SELECT r.status FROM runs r WHERE r.conversation_id = c.id ORDER BY r.num DESC LIMIT 1), 'idle')`

func scanConversation(row pgx.Row) (store.Conversation, error) {
	var c store.Conversation
	if err := row.Scan(&c.ID, &c.UserID, &c.Title, &c.CreatedAt, &c.UpdatedAt, &c.Status); err != nil {
		return c, err
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, nil
}

// runCols are read by scanRun.
const runCols = `id, conversation_id, user_id, status, interrupt_reason, superseded, user_message, usage,
    request_id, owner, checkpoint_id, last_seq, created_at, completed_at`

func scanRun(row pgx.Row) (store.Run, error) {
	var (
		r     store.Run
		usage []byte
	)
	err := row.Scan(&r.ID, &r.ConversationID, &r.UserID, &r.Status, &r.InterruptReason, &r.Superseded,
		&r.UserMessage, &usage, &r.RequestID, &r.Owner, &r.CheckpointID, &r.LastSeq, &r.CreatedAt, &r.CompletedAt)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(usage, &r.Usage); err != nil {
		return r, fmt.Errorf("run %s usage: %w", r.ID, err)
	}
	r.CreatedAt, r.CompletedAt = r.CreatedAt.UTC(), utcPtr(r.CompletedAt)
	return r, nil
}

// scanNumberedRun reads num, then runCols.
func scanNumberedRun(row pgx.Row) (storeutil.NumberedRun, error) {
	var r storeutil.NumberedRun
	var err error
	r.Run, err = scanRun(numFirst{row, &r.Num})
	return r, err
}

// numFirst scans a row's first column into num and the rest into what
// Scan is given.
type numFirst struct {
	row pgx.Row
	num *int64
}

func (n numFirst) Scan(dest ...any) error { return n.row.Scan(append([]any{n.num}, dest...)...) }

// messageCols are read by scanMessage; m is messages, r its run.
const messageCols = `m.id, m.conversation_id, m.run_id, m.role, m.content, m.citations, m.meta, m.created_at, r.superseded`

func scanMessage(row pgx.Row) (store.Message, error) {
	var (
		m               store.Message
		citations, meta []byte
	)
	if err := row.Scan(&m.ID, &m.ConversationID, &m.RunID, &m.Role, &m.Content, &citations, &meta, &m.CreatedAt, &m.Superseded); err != nil {
		return m, err
	}
	m.Citations, m.Meta, m.CreatedAt = rawJSON(citations), rawJSON(meta), m.CreatedAt.UTC()
	return m, nil
}

func scanEvent(row pgx.Row) (store.Event, error) {
	var (
		e    store.Event
		data string
	)
	if err := row.Scan(&e.RunID, &e.Seq, &e.Type, &data, &e.CreatedAt); err != nil {
		return e, err
	}
	e.Data, e.CreatedAt = json.RawMessage(data), e.CreatedAt.UTC()
	return e, nil
}

// approvalCols are read by scanApproval.
const approvalCols = `id, conversation_id, run_id, user_id, tool_call_id, tool, args, revision, status, decision,
    edited_args, reason, created_at, resolved_at`

func scanApproval(row pgx.Row) (store.Approval, error) {
	var (
		a            store.Approval
		args, edited []byte
	)
	err := row.Scan(&a.ID, &a.ConversationID, &a.RunID, &a.UserID, &a.ToolCallID, &a.Tool, &args, &a.Revision,
		&a.Status, &a.Decision, &edited, &a.Reason, &a.CreatedAt, &a.ResolvedAt)
	if err != nil {
		return a, err
	}
	a.Args, a.EditedArgs = json.RawMessage(args), rawJSON(edited)
	a.CreatedAt, a.ResolvedAt = a.CreatedAt.UTC(), utcPtr(a.ResolvedAt)
	return a, nil
}

// elicitationCols are read by scanElicitation.
const elicitationCols = `id, conversation_id, run_id, user_id, source, message, schema, status, content, created_at, resolved_at`

func scanElicitation(row pgx.Row) (store.Elicitation, error) {
	var (
		e               store.Elicitation
		schema, content []byte
	)
	err := row.Scan(&e.ID, &e.ConversationID, &e.RunID, &e.UserID, &e.Source, &e.Message, &schema, &e.Status,
		&content, &e.CreatedAt, &e.ResolvedAt)
	if err != nil {
		return e, err
	}
	e.Schema, e.Content = json.RawMessage(schema), rawJSON(content)
	e.CreatedAt, e.ResolvedAt = e.CreatedAt.UTC(), utcPtr(e.ResolvedAt)
	return e, nil
}

// rawJSON keeps NULL as nil.
func rawJSON(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// collect reads every row with scan, into a non-nil slice.
func collect[T any](rows pgx.Rows, scan func(pgx.Row) (T, error)) ([]T, error) {
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
	if out == nil && err == nil {
		out = []T{}
	}
	return out, err
}
