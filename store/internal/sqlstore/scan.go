package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// conversationCols are read by scanConversation; status is the active
// branch's last run's (store.Runs.LatestRun).
const conversationCols = `c.id, c.user_id, c.title, c.title_by_user, c.deleting, c.created_at, c.updated_at, c.metadata,
    coalesce((SELECT r.status FROM runs r WHERE r.conversation_id = c.id ORDER BY r.superseded, r.num DESC LIMIT 1), 'idle')`

func scanConversation(row Row) (store.Conversation, error) {
	var (
		c                store.Conversation
		created, updated dbTime
		metadata         string
	)
	if err := row.Scan(&c.ID, &c.UserID, &c.Title, &c.TitleByUser, &c.Deleting, &created, &updated, &metadata, &c.Status); err != nil {
		return c, err
	}
	c.CreatedAt, c.UpdatedAt, c.Metadata = created.t, updated.t, json.RawMessage(metadata)
	return c, nil
}

// RunCols are read by ScanRun.
const RunCols = `id, conversation_id, user_id, status, interrupt_reason, superseded, user_message, usage,
    request_id, owner, checkpoint_id, last_seq, created_at, completed_at, parent_id`

// ScanRun reads RunCols.
func ScanRun(row Row) (store.Run, error) {
	var (
		r                  store.Run
		usage              []byte
		created, completed dbTime
	)
	err := row.Scan(&r.ID, &r.ConversationID, &r.UserID, &r.Status, &r.InterruptReason, &r.Superseded,
		&r.UserMessage, &usage, &r.RequestID, &r.Owner, &r.CheckpointID, &r.LastSeq, &created, &completed, &r.ParentID)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(usage, &r.Usage); err != nil {
		return r, fmt.Errorf("run %s usage: %w", r.ID, err)
	}
	r.CreatedAt, r.CompletedAt = created.t, completed.ptr()
	return r, nil
}

// scanNumberedRun reads num, then RunCols.
func scanNumberedRun(row Row) (storeutil.NumberedRun, error) {
	var r storeutil.NumberedRun
	var err error
	r.Run, err = ScanRun(firstCol{row, &r.Num})
	return r, err
}

// firstCol scans a row's first column into first and the rest into what
// Scan is given.
type firstCol struct {
	row   Row
	first any
}

func (f firstCol) Scan(dest ...any) error { return f.row.Scan(append([]any{f.first}, dest...)...) }

// messageCols are read by scanMessage; m is messages, r its run.
const messageCols = `m.id, m.conversation_id, m.run_id, m.role, m.content, m.citations, m.meta, m.created_at, r.superseded`

func scanMessage(row Row) (store.Message, error) {
	var (
		m               store.Message
		citations, meta []byte
		created         dbTime
	)
	if err := row.Scan(&m.ID, &m.ConversationID, &m.RunID, &m.Role, &m.Content, &citations, &meta, &created, &m.Superseded); err != nil {
		return m, err
	}
	m.Citations, m.Meta, m.CreatedAt = rawJSON(citations), rawJSON(meta), created.t
	return m, nil
}

// humanCols are the columns every kind of human request has, first in
// each kind's list; deadlineCols those of its deadline, last in theirs.
// scanHuman reads them.
const (
	humanCols    = `id, conversation_id, run_id, user_id, status, created_at, resolved_at`
	deadlineCols = `expires_at, on_expiry, timed_out`
)

// scanHuman reads a row of a kind's columns into r: humanCols, then the
// kind's own into kindDest, then deadlineCols.
func scanHuman(row Row, r *store.HumanRequest, kindDest ...any) error {
	var created, resolved, expires dbTime
	dest := append([]any{&r.ID, &r.ConversationID, &r.RunID, &r.UserID, &r.Status, &created, &resolved}, kindDest...)
	dest = append(dest, &expires, &r.OnExpiry, &r.TimedOut)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	r.CreatedAt, r.ResolvedAt, r.ExpiresAt = created.t, resolved.ptr(), expires.ptr()
	return nil
}

// approvalCols are read by scanApproval.
const approvalCols = humanCols + `, tool_call_id, tool, args, revision, decision, edited_args, reason, ` + deadlineCols

func scanApproval(row Row) (store.HumanRequest, error) {
	var (
		r            = store.HumanRequest{Kind: events.PendingApproval}
		a            = &r.Approval
		args, edited []byte
	)
	if err := scanHuman(row, &r, &a.ToolCallID, &a.Tool, &args, &a.Revision, &a.Decision, &edited, &a.Reason); err != nil {
		return r, err
	}
	a.Args, a.EditedArgs = json.RawMessage(args), rawJSON(edited)
	return r, nil
}

// elicitationCols are read by scanElicitation.
const elicitationCols = humanCols + `, source, message, schema, content, ` + deadlineCols

func scanElicitation(row Row) (store.HumanRequest, error) {
	var (
		r               = store.HumanRequest{Kind: events.PendingElicitation}
		e               = &r.Elicitation
		schema, content []byte
	)
	if err := scanHuman(row, &r, &e.Source, &e.Message, &schema, &content); err != nil {
		return r, err
	}
	e.Schema, e.Content = json.RawMessage(schema), rawJSON(content)
	return r, nil
}

// clarificationCols are read by scanClarification.
const clarificationCols = humanCols + `, question, answer, ` + deadlineCols

func scanClarification(row Row) (store.HumanRequest, error) {
	r := store.HumanRequest{Kind: events.PendingClarification}
	c := &r.Clarification
	return r, scanHuman(row, &r, &c.Question, &c.Answer)
}

// uncertainCallCols are read by scanUncertainCall.
const uncertainCallCols = humanCols + `, tool_call_id, tool, args, ` + deadlineCols

func scanUncertainCall(row Row) (store.HumanRequest, error) {
	var (
		r    = store.HumanRequest{Kind: events.PendingUncertainCall}
		u    = &r.UncertainCall
		args []byte
	)
	if err := scanHuman(row, &r, &u.ToolCallID, &u.Tool, &args); err != nil {
		return r, err
	}
	u.Args = json.RawMessage(args)
	return r, nil
}

// rawJSON keeps NULL as nil.
func rawJSON(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// nullJSON stores nil as NULL, and anything else as the JSON text it is.
func nullJSON(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// scanString scans a row of one text column.
func scanString(row Row) (string, error) {
	var v string
	err := row.Scan(&v)
	return v, err
}

// objectOr returns b, or "{}" when b is nil.
func objectOr(b []byte) string {
	if b == nil {
		return "{}"
	}
	return string(b)
}

// queryAll runs query in q and scans every row it returns, as Collect
// does.
func queryAll[T any](ctx context.Context, q Querier, scan func(Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return Collect(rows, scan)
}

// Collect reads every row with scan, into a non-nil slice, and closes
// rows.
func Collect[T any](rows Rows, scan func(Row) (T, error)) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// CollectBudget reads rows as Collect does, but stops before the row
// that store.Budget refuses (as size counts its bytes), and reports
// that it stopped: cut. The first row is always read, however large. It
// closes rows.
func CollectBudget[T any](rows Rows, scan func(Row) (T, error), size func(T) int) (out []T, cut bool, err error) {
	defer rows.Close()
	out = []T{}
	var b store.Budget
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, false, err
		}
		if !b.Take(size(v)) {
			return out, true, nil
		}
		out = append(out, v)
	}
	return out, false, rows.Err()
}
