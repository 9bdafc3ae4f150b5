package sqlitestore

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// conversationCols are read by scanConversation; status is the latest
// run's.
const conversationCols = `c.id, c.user_id, c.title, c.created_at, c.updated_at,
    coalesce((SELECT r.status FROM runs r WHERE r.conversation_id = c.id ORDER BY r.num DESC LIMIT 1), 'idle')`

func scanConversation(row scanner) (store.Conversation, error) {
	var (
		c                string
		created, updated string
	)
	var conv store.Conversation
	if err := row.Scan(&conv.ID, &conv.UserID, &conv.Title, &created, &updated, &c); err != nil {
		return conv, err
	}
	conv.Status = store.RunStatus(c)
	var err error
	if conv.CreatedAt, err = parseTime(created); err != nil {
		return conv, err
	}
	conv.UpdatedAt, err = parseTime(updated)
	return conv, err
}

// runCols are read by scanRun.
const runCols = `id, conversation_id, user_id, status, interrupt_reason, superseded, user_message, usage,
    request_id, owner, checkpoint_id, last_seq, created_at, completed_at`

func scanRun(row scanner) (store.Run, error) {
	var (
		r         store.Run
		usage     string
		created   string
		completed sql.NullString
	)
	err := row.Scan(&r.ID, &r.ConversationID, &r.UserID, &r.Status, &r.InterruptReason, &r.Superseded,
		&r.UserMessage, &usage, &r.RequestID, &r.Owner, &r.CheckpointID, &r.LastSeq, &created, &completed)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(usage), &r.Usage); err != nil {
		return r, fmt.Errorf("run %s usage: %w", r.ID, err)
	}
	if r.CreatedAt, err = parseTime(created); err != nil {
		return r, err
	}
	r.CompletedAt, err = nullTime(completed)
	return r, err
}

// scanNumberedRun reads num, then runCols.
func scanNumberedRun(row scanner) (storeutil.NumberedRun, error) {
	var r storeutil.NumberedRun
	var err error
	r.Run, err = scanRun(numFirst{row, &r.Num})
	return r, err
}

// numFirst scans a row's first column into num and the rest into what
// Scan is given.
type numFirst struct {
	row scanner
	num *int64
}

func (n numFirst) Scan(dest ...any) error { return n.row.Scan(append([]any{n.num}, dest...)...) }

// messageCols are read by scanMessage; m is messages, r its run.
const messageCols = `m.id, m.conversation_id, m.run_id, m.role, m.content, m.citations, m.meta, m.created_at, r.superseded`

func scanMessage(row scanner) (store.Message, error) {
	var (
		m               store.Message
		citations, meta sql.NullString
		created         string
	)
	if err := row.Scan(&m.ID, &m.ConversationID, &m.RunID, &m.Role, &m.Content, &citations, &meta, &created, &m.Superseded); err != nil {
		return m, err
	}
	m.Citations, m.Meta = rawJSON(citations), rawJSON(meta)
	var err error
	m.CreatedAt, err = parseTime(created)
	return m, err
}

// eventCols are read by scanEvent.
const eventCols = `run_id, seq, type, data, created_at`

func scanEvent(row scanner) (store.Event, error) {
	var (
		e       store.Event
		data    string
		created string
	)
	if err := row.Scan(&e.RunID, &e.Seq, &e.Type, &data, &created); err != nil {
		return e, err
	}
	e.Data = json.RawMessage(data)
	var err error
	e.CreatedAt, err = parseTime(created)
	return e, err
}

// approvalCols are read by scanApproval.
const approvalCols = `id, conversation_id, run_id, user_id, tool_call_id, tool, args, revision, status, decision,
    edited_args, reason, created_at, resolved_at`

func scanApproval(row scanner) (store.Approval, error) {
	var (
		a        store.Approval
		args     string
		edited   sql.NullString
		created  string
		resolved sql.NullString
	)
	err := row.Scan(&a.ID, &a.ConversationID, &a.RunID, &a.UserID, &a.ToolCallID, &a.Tool, &args, &a.Revision,
		&a.Status, &a.Decision, &edited, &a.Reason, &created, &resolved)
	if err != nil {
		return a, err
	}
	a.Args, a.EditedArgs = json.RawMessage(args), rawJSON(edited)
	if a.CreatedAt, err = parseTime(created); err != nil {
		return a, err
	}
	a.ResolvedAt, err = nullTime(resolved)
	return a, err
}

// elicitationCols are read by scanElicitation.
const elicitationCols = `id, conversation_id, run_id, user_id, source, message, schema, status, content, created_at, resolved_at`

func scanElicitation(row scanner) (store.Elicitation, error) {
	var (
		e        store.Elicitation
		schema   string
		content  sql.NullString
		created  string
		resolved sql.NullString
	)
	err := row.Scan(&e.ID, &e.ConversationID, &e.RunID, &e.UserID, &e.Source, &e.Message, &schema, &e.Status,
		&content, &created, &resolved)
	if err != nil {
		return e, err
	}
	e.Schema, e.Content = json.RawMessage(schema), rawJSON(content)
	if e.CreatedAt, err = parseTime(created); err != nil {
		return e, err
	}
	e.ResolvedAt, err = nullTime(resolved)
	return e, err
}

func rawJSON(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// collect reads every row with scan.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
