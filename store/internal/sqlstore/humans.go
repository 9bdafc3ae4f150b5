package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// A human request of each kind is a row of the kind's table: the
// functions below do for either what is the same for both, and the
// methods of store.HumanRequests pick the table by kind.
type human struct {
	table string // approvals, elicitations, clarifications or uncertain_calls
	cols  string // read by scan
	scan  func(Row) (store.HumanRequest, error)
}

var (
	approvals      = human{"approvals", approvalCols, scanApproval}
	elicitations   = human{"elicitations", elicitationCols, scanElicitation}
	clarifications = human{"clarifications", clarificationCols, scanClarification}
	uncertainCalls = human{"uncertain_calls", uncertainCallCols, scanUncertainCall}
)

// humanOf returns the table of a kind.
func humanOf(kind events.PendingKind) (human, error) {
	switch kind {
	case events.PendingApproval:
		return approvals, nil
	case events.PendingElicitation:
		return elicitations, nil
	case events.PendingClarification:
		return clarifications, nil
	case events.PendingUncertainCall:
		return uncertainCalls, nil
	}
	return human{}, fmt.Errorf("%w: kind %q is not approval, elicitation, clarification or uncertain_call", store.ErrInvalid, kind)
}

// create inserts a pending record of h's table for a run, with cols (a
// column list) set to vals, and reads the run's conversation and user
// into conversationID and userID: they come from the run, in the
// statement that inserts.
func (h human) create(ctx context.Context, s *Store, id, runID string, created time.Time, cols string, vals []any,
	conversationID, userID *string) error {
	args := append(append([]any{id}, vals...), s.db.Time(created), runID)
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		return q.QueryRow(ctx, `INSERT INTO `+h.table+` (id, conversation_id, run_id, user_id, `+cols+`, status, created_at)
SELECT ?, conversation_id, id, user_id, `+strings.Repeat("?, ", len(vals))+`'pending', ? FROM runs WHERE id = ?
RETURNING conversation_id, user_id`, args...).Scan(conversationID, userID)
	})
	switch {
	case noRows(err), s.db.Violates(err, h.table+"_run_id_fkey"):
		return store.ErrNotFound
	case s.db.Violates(err, h.table+"_pkey"):
		return fmt.Errorf("id is taken: %w", store.ErrConflict)
	}
	return err
}

// resolve sets what set names (columns = ?, with vals) on the user's
// record if it is still pending: one conditional update, so only an
// answer that finds it pending changes it. On PostgreSQL a concurrent
// answer waits for the row's lock and then finds it answered.
func (h human) resolve(ctx context.Context, s *Store, userID, id, set string, vals ...any) (store.HumanRequest, error) {
	var v store.HumanRequest
	args := append(vals, s.db.Time(storeutil.Now()), id, userID)
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		var err error
		v, err = h.scan(q.QueryRow(ctx, `UPDATE `+h.table+` SET `+set+`, resolved_at = ?
WHERE id = ? AND user_id = ? AND status = 'pending' RETURNING `+h.cols, args...))
		if noRows(err) {
			return h.existsOr(ctx, q, userID, id)
		}
		return err
	})
	return v, err
}

// existsOr tells why a conditional update of a pending record found
// nothing: ErrAlreadyResolved when the record exists, else ErrNotFound.
func (h human) existsOr(ctx context.Context, q Querier, userID, id string) error {
	if err := owned(ctx, q, h.table, userID, id); err != nil {
		return err
	}
	return store.ErrAlreadyResolved
}

// get reads one record by id, scoped to its user.
func (h human) get(ctx context.Context, s *Store, userID, id string) (store.HumanRequest, error) {
	var zero store.HumanRequest
	if err := storeutil.CheckIDs(userID, id); err != nil {
		return zero, s.errorf("get %s: %w", h.table, err)
	}
	v, err := h.scan(s.db.QueryRow(ctx, `SELECT `+h.cols+` FROM `+h.table+` WHERE id = ? AND user_id = ?`, id, userID))
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return zero, s.errorf("get %s %s: %w", h.table, id, err)
	}
	return v, nil
}

// pending reads a page of the user's pending records, oldest first, of
// one conversation when conversationID is set (ErrNotFound if it is not
// the user's). Its requests are never nil.
func (h human) pending(ctx context.Context, s *Store, userID, conversationID string, page store.Page) (store.HumanRequestPage, error) {
	if _, _, _, err := checkPage(page); err != nil {
		return store.HumanRequestPage{}, s.errorf("pending %s: %w", h.table, err)
	}
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		if conversationID != "" {
			return store.HumanRequestPage{}, s.errorf("pending %s: %w", h.table, err)
		}
		return store.HumanRequestPage{Requests: []store.HumanRequest{}}, nil // no such user, so nothing is pending
	}
	var p store.HumanRequestPage
	err := s.db.Read(ctx, func(q Querier) error {
		k := keyed{sel: `SELECT ` + h.cols + ` FROM ` + h.table + ` h`, alias: "h",
			where: `h.user_id = ? AND h.status = 'pending'`, args: []any{userID}, oldest: true}
		if conversationID != "" {
			if err := ownsConversation(ctx, q, userID, conversationID); err != nil {
				return err
			}
			k.where, k.args = k.where+` AND h.conversation_id = ?`, append(k.args, conversationID)
		}
		var err error
		p.Requests, p.NextCursor, err = readPage(ctx, s, q, k, page, h.scan,
			func(r store.HumanRequest) storeutil.Cursor { return storeutil.Cursor{CreatedAt: r.CreatedAt, ID: r.ID} }, humanBytes)
		return err
	})
	if err != nil {
		return store.HumanRequestPage{}, s.errorf("pending %s: %w", h.table, err)
	}
	return p, nil
}

// humanBytes is a human request's size in a page (see store.PageBytes).
func humanBytes(r store.HumanRequest) int {
	a, e, c, u := r.Approval, r.Elicitation, r.Clarification, r.UncertainCall
	return len(a.Args) + len(a.EditedArgs) + len(a.Reason) + len(e.Message) + len(e.Schema) + len(e.Content) +
		len(c.Question) + len(c.Answer) + len(u.Args)
}

// CreateHumanRequest implements store.HumanRequests.
func (s *Store) CreateHumanRequest(ctx context.Context, n store.NewHumanRequest) (store.HumanRequest, error) {
	if err := cmp.Or(n.Validate(), storeutil.CheckIDs(n.RunID)); err != nil {
		return store.HumanRequest{}, s.errorf("create %s: %w", cmp.Or(string(n.Kind), "human request"), err)
	}
	r := store.HumanRequest{ID: n.ID, Kind: n.Kind, RunID: n.RunID, Status: store.HumanPending, CreatedAt: storeutil.Now(),
		OnExpiry: n.OnExpiry}
	var expires any // NULL: no deadline
	if n.ExpiresAt != nil {
		at := n.ExpiresAt.UTC().Truncate(time.Microsecond) // as either database keeps it
		r.ExpiresAt, expires = &at, s.db.Time(at)
	}
	if r.ID == "" {
		r.ID = ids.New()
	}
	// What is asked is the kind's part: its columns and their values.
	var (
		h    human
		cols string
		vals []any
	)
	switch n.Kind {
	case events.PendingApproval:
		a := n.Approval
		r.Approval = store.Approval{ToolCallID: a.ToolCallID, Tool: a.Tool, Args: []byte(objectOr(a.Args)), Revision: a.Revision}
		h, cols = approvals, "tool_call_id, tool, args, revision, expires_at, on_expiry"
		vals = []any{a.ToolCallID, a.Tool, string(r.Approval.Args), a.Revision, expires, string(n.OnExpiry)}
	case events.PendingElicitation:
		e := n.Elicitation
		r.Elicitation = store.Elicitation{Source: e.Source, Message: e.Message, Schema: []byte(objectOr(e.Schema))}
		h, cols = elicitations, "source, message, schema, expires_at, on_expiry"
		vals = []any{e.Source, e.Message, string(r.Elicitation.Schema), expires, string(n.OnExpiry)}
	case events.PendingClarification:
		r.Clarification = store.Clarification{Question: n.Clarification.Question}
		h, cols, vals = clarifications, "question, expires_at, on_expiry", []any{n.Clarification.Question, expires, string(n.OnExpiry)}
	case events.PendingUncertainCall:
		u := n.UncertainCall
		r.UncertainCall = store.UncertainCall{ToolCallID: u.ToolCallID, Tool: u.Tool, Args: []byte(objectOr(u.Args))}
		h, cols = uncertainCalls, "tool_call_id, tool, args, expires_at, on_expiry"
		vals = []any{u.ToolCallID, u.Tool, string(r.UncertainCall.Args), expires, string(n.OnExpiry)}
	}
	if err := h.create(ctx, s, r.ID, r.RunID, r.CreatedAt, cols, vals, &r.ConversationID, &r.UserID); err != nil {
		return store.HumanRequest{}, s.errorf("create %s %s for run %s: %w", n.Kind, r.ID, n.RunID, err)
	}
	return r, nil
}

// GetHumanRequest implements store.HumanRequests.
func (s *Store) GetHumanRequest(ctx context.Context, kind events.PendingKind, userID, id string) (store.HumanRequest, error) {
	h, err := humanOf(kind)
	if err != nil {
		return store.HumanRequest{}, s.errorf("get human request %s: %w", id, err)
	}
	return h.get(ctx, s, userID, id)
}

// PendingHumanRequests implements store.HumanRequests.
func (s *Store) PendingHumanRequests(ctx context.Context, kind events.PendingKind, userID, conversationID string, page store.Page) (store.HumanRequestPage, error) {
	h, err := humanOf(kind)
	if err != nil {
		return store.HumanRequestPage{}, s.errorf("pending human requests: %w", err)
	}
	return h.pending(ctx, s, userID, conversationID, page)
}

// ResolveHumanRequest implements store.HumanRequests.
func (s *Store) ResolveHumanRequest(ctx context.Context, userID, id string, ans store.HumanAnswer) (store.HumanRequest, error) {
	if ans == nil {
		return store.HumanRequest{}, s.errorf("resolve human request %s: %w: no answer", id, store.ErrInvalid)
	}
	if err := cmp.Or(ans.Validate(), storeutil.CheckIDs(userID, id)); err != nil {
		return store.HumanRequest{}, s.errorf("resolve %s %s: %w", ans.Kind(), id, err)
	}
	var (
		r   store.HumanRequest
		err error
	)
	switch ans := ans.(type) {
	case store.ApprovalAnswer:
		var edited any
		if ans.Decision == events.DecisionEdit {
			edited = string(ans.Args)
		}
		r, err = approvals.resolve(ctx, s, userID, id, `status = ?, decision = ?, edited_args = ?, reason = ?`,
			ans.Status(), ans.Decision, edited, ans.Reason)
	case store.DeadlineAnswer:
		if ans.Kind() == events.PendingApproval {
			r, err = approvals.resolve(ctx, s, userID, id, `status = ?, decision = ?, timed_out = TRUE`, ans.Status(), ans.Decision())
			break
		}
		var h human
		if h, err = humanOf(ans.Kind()); err == nil {
			r, err = h.resolve(ctx, s, userID, id, `status = ?, timed_out = TRUE`, ans.Status())
		}
	case store.ElicitationAnswer:
		var content any
		if ans.Action == events.ElicitAccept {
			content = nullJSON(ans.Content)
		}
		r, err = elicitations.resolve(ctx, s, userID, id, `status = ?, content = ?`, ans.Status(), content)
	case store.CallAnswer:
		r, err = uncertainCalls.resolve(ctx, s, userID, id, `status = ?`, ans.Status())
	default:
		err = fmt.Errorf("%w: answer of kind %q", store.ErrInvalid, ans.Kind())
	}
	if err != nil {
		return store.HumanRequest{}, s.errorf("resolve %s %s: %w", ans.Kind(), id, err)
	}
	return r, nil
}

// answerClarification records message as the answer to the
// conversation's pending clarifying question, if one waits: the agent
// takes the message that starts the conversation's next run as the
// answer, so StartRun records it in the transaction that stores the
// message.
func answerClarification(ctx context.Context, q Querier, conversationID, message string, at any) error {
	_, err := q.Exec(ctx, `UPDATE clarifications SET status = 'answered', answer = ?, resolved_at = ?
WHERE conversation_id = ? AND status = 'pending'`, message, at, conversationID)
	return err
}

// clarificationExpiring refuses, with ErrRunActive, a run on a
// conversation whose clarifying question its deadline decided while the
// run that asked it has not yet taken the outcome up (it is still
// parked): of the user's message and the deadline the deadline won, and
// its outcome — the asking run going on, or cancelled — comes first. It
// follows answerClarification, whose update waits for a deadline's
// concurrent one, so that either the message answers the question or
// this sees the deadline's decision.
func clarificationExpiring(ctx context.Context, q Querier, conversationID string) error {
	var one int
	err := q.QueryRow(ctx, expiringClarification+` LIMIT 1`, conversationID).Scan(&one)
	switch {
	case noRows(err):
		return nil
	case err != nil:
		return err
	}
	return errClarificationExpiring
}

// expiringClarification selects the clarifying questions of the
// conversation ? that clarificationExpiring looks for.
const expiringClarification = `SELECT 1 FROM clarifications c JOIN runs r ON r.id = c.run_id
WHERE c.conversation_id = ? AND c.timed_out AND r.status = 'interrupted' AND NOT r.superseded`

var errClarificationExpiring = fmt.Errorf("the deadline of the conversation's clarifying question is being applied: %w", store.ErrRunActive)

// followed reads, with q, StartRun's transaction once it has locked the
// conversation's row (see StartRun), the run a new run of the
// conversation follows (its newest not superseded, "" for none) and
// whether a clarifying question of the conversation is pending. When
// none is, it does clarificationExpiring's check too, in the same
// statement, and StartRun skips answerClarification's update, which
// would find nothing: with no question pending, no deadline decides one
// meanwhile (a deadline decides only a pending question), and none that
// this run's message should answer is asked meanwhile. Only a running
// run asks one (runs, as it parks); that run holds runs_one_active, so
// this transaction's run cannot be stored until it has ended, and its
// end updates the conversation's row, which this transaction holds.
func followed(ctx context.Context, q Querier, conversationID string) (parent string, pending bool, err error) {
	var expiring bool
	err = q.QueryRow(ctx, `SELECT COALESCE((SELECT id FROM runs WHERE conversation_id = ? AND NOT superseded ORDER BY num DESC LIMIT 1), ''),
    EXISTS (SELECT 1 FROM clarifications WHERE conversation_id = ? AND status = 'pending'), EXISTS (`+expiringClarification+`)`,
		conversationID, conversationID, conversationID).Scan(&parent, &pending, &expiring)
	if err == nil && !pending && expiring {
		err = errClarificationExpiring
	}
	return parent, pending, err
}
