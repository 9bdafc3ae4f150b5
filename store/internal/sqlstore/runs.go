package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// StartRun implements store.Runs. Its first statement that writes locks
// the conversation's row (PostgreSQL) or holds the database's write lock
// (SQLite), which queues StartRuns of one conversation behind each other,
// also across processes; the unique index runs_one_active is the last
// word on whether another run is active. A new conversation is inserted
// first, in the same transaction.
func (s *Store) StartRun(ctx context.Context, nr store.NewRun) (store.Run, error) {
	if err := cmp.Or(nr.Validate(), storeutil.CheckIDs(nr.UserID, nr.ConversationID, nr.Supersedes)); err != nil {
		return store.Run{}, s.errorf("start run: %w", err)
	}
	if nr.NewConversation != nil {
		nr.ConversationID = ids.New()
	}
	var r store.Run
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) (err error) {
		r, err = s.startRun(ctx, q, ids.New(), nr)
		return err
	})
	if err != nil {
		return store.Run{}, s.errorf("start run on conversation %s: %w", nr.ConversationID, s.started(err))
	}
	return r, nil
}

// started is the error of a transaction of startRun: ErrRunActive for a
// violation of runs_one_active, which on PostgreSQL may be the commit's,
// and refused's.
func (s *Store) started(err error) error {
	if s.db.Violates(err, "runs_one_active") {
		return store.ErrRunActive
	}
	return s.refused(err)
}

// startRun is StartRun's transaction, storing the run as id; its error
// is for started.
func (s *Store) startRun(ctx context.Context, q Querier, id string, nr store.NewRun) (store.Run, error) {
	now := storeutil.Now()
	r := store.Run{ID: id, ConversationID: nr.ConversationID, UserID: nr.UserID, Status: store.RunRunning,
		UserMessage: nr.UserMessage, CreatedAt: now, CheckpointID: nr.CheckpointID, RequestID: nr.RequestID, Owner: nr.Owner}
	at := s.db.Time(now)
	err := func() error {
		var num int64
		counted := func() error { return nil }
		if nc := nr.NewConversation; nc != nil {
			// Stored with this run counted: it is the first.
			num = 1
			c := store.Conversation{ID: nr.ConversationID, UserID: nc.UserID, Title: nc.Title, CreatedAt: now, UpdatedAt: now, Metadata: nc.Metadata}
			if err := insertConversationRuns(ctx, q, c, at, num); err != nil {
				return err
			}
		} else {
			// The conversation's row is locked first, so that what
			// supersede or followed reads next, in a statement of its
			// own, is what the run starts from. followed's read goes
			// with it (on PostgreSQL); supersede, which writes, waits
			// to know that the conversation is the user's.
			const count = `UPDATE conversations SET run_count = run_count + 1, updated_at = ?
WHERE id = ? AND user_id = ? AND NOT deleting RETURNING run_count, EXISTS (SELECT 1 FROM documents WHERE conversation_id = conversations.id)`
			args := []any{at, nr.ConversationID, nr.UserID}
			scan := func(row Row) error { return row.Scan(&num, &r.Documents) }
			if nr.Supersedes == "" {
				counted = queryRowLater(ctx, q, count, args, scan)
			} else if err := scan(q.QueryRow(ctx, count, args...)); noRows(err) {
				return notTaking(ctx, q, nr.UserID)
			} else if err != nil {
				return err
			}
		}
		// asked: a clarifying question may wait for the run's message.
		asked := nr.NewConversation == nil
		var err error
		switch {
		case nr.Supersedes != "":
			err = supersede(ctx, q, nr.ConversationID, nr.Supersedes, at, &r.CheckpointID, &r.ParentID)
		case nr.NewConversation == nil:
			r.ParentID, asked, err = followed(ctx, q, nr.ConversationID)
		}
		if cerr := counted(); noRows(cerr) {
			return notTaking(ctx, q, nr.UserID)
		} else if cerr != nil {
			return cerr
		}
		if err != nil {
			return err
		}
		if asked {
			if err := answerClarification(ctx, q, nr.ConversationID, nr.UserMessage, at); err != nil {
				return err
			}
			if err := clarificationExpiring(ctx, q, nr.ConversationID); err != nil {
				return err
			}
		}
		// Held on PostgreSQL with the message's insert, to go with the
		// COMMIT: the message's run is this transaction's own, so its
		// insert cannot miss it, and nothing reads either back. A
		// violation of runs_one_active may come from either, or from
		// the commit (see started).
		err = execLater(ctx, q, `INSERT INTO runs (id, conversation_id, user_id, num, status, user_message, request_id, owner,
    checkpoint_id, created_at, input, parent_id, model) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.ConversationID, r.UserID, num, r.UserMessage, r.RequestID, r.Owner, r.CheckpointID, at, string(nr.Input), r.ParentID,
			cmp.Or(nr.Model, "default"))
		if err != nil {
			return err
		}
		m := store.Message{ID: ids.New(), ConversationID: r.ConversationID, RunID: r.ID, Role: store.RoleUser, Content: r.UserMessage}
		return execLater(ctx, q, insertRunMessage, insertRunMessageArgs(&m, at)...)
	}()
	return r, err
}

// humanTables hold what a run waits on; a run that ends or is superseded
// expires what it left pending in them.
var humanTables = [...]string{"approvals", "elicitations", "clarifications", "uncertain_calls"}

// pendingHuman is true when the run of the row (runs.id) has a pending
// request in one of humanTables.
const pendingHuman = `(EXISTS (SELECT 1 FROM approvals WHERE run_id = runs.id AND status = 'pending')
    OR EXISTS (SELECT 1 FROM elicitations WHERE run_id = runs.id AND status = 'pending')
    OR EXISTS (SELECT 1 FROM clarifications WHERE run_id = runs.id AND status = 'pending')
    OR EXISTS (SELECT 1 FROM uncertain_calls WHERE run_id = runs.id AND status = 'pending'))`

// supersede marks run from and every later run of the conversation
// superseded and expires what they left pending, at now (DB.Time).
// checkpoint, if empty, becomes from's checkpoint; parent becomes the run
// from follows. The runs not superseded are one path of the runs' tree,
// along which numbers grow: the later runs are those after from on it,
// and runs superseded already.
//
// The UPDATE reads the latest status of the runs it marks (on PostgreSQL
// it locks them), so a run that a concurrent ResumeRun set running is
// seen running, and refused; a ResumeRun coming after finds its run
// superseded.
func supersede(ctx context.Context, q Querier, conversationID, from string, now any, checkpoint, parent *string) error {
	var (
		num        int64
		superseded bool
		cp         string
	)
	err := q.QueryRow(ctx, `SELECT num, superseded, checkpoint_id, parent_id FROM runs WHERE id = ? AND conversation_id = ?`,
		from, conversationID).Scan(&num, &superseded, &cp, parent)
	if noRows(err) {
		return fmt.Errorf("superseding run %s: %w", from, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if superseded {
		return fmt.Errorf("run %s was superseded already: %w", from, store.ErrConflict)
	}
	type marked struct {
		id     string
		status store.RunStatus
	}
	runs, err := queryAll(ctx, q, func(row Row) (marked, error) {
		var m marked
		return m, row.Scan(&m.id, &m.status)
	}, `UPDATE runs SET superseded = true WHERE conversation_id = ? AND num >= ? RETURNING id, status`,
		conversationID, num)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.status == store.RunRunning {
			return fmt.Errorf("run %s is still running; cancel it first: %w", r.id, store.ErrRunActive)
		}
	}
	for _, table := range humanTables {
		if _, err := q.Exec(ctx, `UPDATE `+table+` SET status = 'expired', resolved_at = ?
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
		return store.Run{}, s.errorf("get run: %w", err)
	}
	r, err := ScanRun(s.db.QueryRow(ctx, `SELECT `+RunCols+` FROM runs WHERE id = ? AND user_id = ?`, runID, userID))
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, s.errorf("get run %s: %w", runID, err)
	}
	return r, nil
}

// RunInput implements store.Runs.
func (s *Store) RunInput(ctx context.Context, userID, runID string) (json.RawMessage, error) {
	if err := storeutil.CheckIDs(userID, runID); err != nil {
		return nil, s.errorf("run input: %w", err)
	}
	var in string
	err := s.db.QueryRow(ctx, `SELECT input FROM runs WHERE id = ? AND user_id = ?`, runID, userID).Scan(&in)
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("input of run %s: %w", runID, err)
	}
	if in == "" {
		return nil, nil
	}
	return json.RawMessage(in), nil
}

// LatestRun implements store.Runs.
func (s *Store) LatestRun(ctx context.Context, userID, conversationID string) (store.Run, error) {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		return store.Run{}, s.errorf("latest run: %w", err)
	}
	r, err := ScanRun(s.db.QueryRow(ctx, `SELECT `+RunCols+` FROM runs
WHERE conversation_id = ? AND user_id = ? ORDER BY superseded, num DESC LIMIT 1`, conversationID, userID))
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, s.errorf("latest run of conversation %s: %w", conversationID, err)
	}
	return r, nil
}

// ListRuns implements store.Runs. A run's first n events are those
// numbered 1 to n, since sequence numbers have no gaps.
func (s *Store) ListRuns(ctx context.Context, userID, conversationID string, q store.RunQuery) (store.RunPage, error) {
	page, err := s.listRuns(ctx, userID, conversationID, q)
	if err != nil {
		return store.RunPage{}, s.errorf("list runs of conversation %s: %w", conversationID, err)
	}
	return page, nil
}

func (s *Store) listRuns(ctx context.Context, userID, conversationID string, rq store.RunQuery) (store.RunPage, error) {
	if err := storeutil.CheckIDs(userID, conversationID, rq.Branch); err != nil {
		return store.RunPage{}, err
	}
	size, after, events, err := storeutil.RunQueryOf(rq)
	if err != nil {
		return store.RunPage{}, err
	}
	var (
		runs []storeutil.NumberedRun
		evs  []store.Event
		msgs []store.Message
		keep int  // the page's runs: runs[:keep]
		more bool // a run after them was left out for the budget
	)
	// With a branch, each query reads only the runs of its path.
	var (
		with, onBranch string
		args           []any
	)
	if rq.Branch != "" {
		with, onBranch, args = branchPath, ` AND r.id IN (SELECT id FROM path)`, []any{rq.Branch, conversationID, conversationID}
	}
	err = s.db.Read(ctx, func(q Querier) error {
		if err := ownsConversation(ctx, q, userID, conversationID); err != nil {
			return err
		}
		if rq.Branch != "" {
			if err := runOf(ctx, q, conversationID, rq.Branch); err != nil {
				return err
			}
		}
		// One more than the page holds tells whether another page follows.
		rows, err := q.Query(ctx, with+`SELECT r.num, `+qualified("r", RunCols)+`,
    (SELECT count(*) FROM runs v WHERE v.conversation_id = r.conversation_id AND v.parent_id = r.parent_id),
    (SELECT count(*) FROM runs v WHERE v.conversation_id = r.conversation_id AND v.parent_id = r.parent_id AND v.num <= r.num)
FROM runs r WHERE r.conversation_id = ? AND r.num > ?`+onBranch+` ORDER BY r.num LIMIT ?`, append(args, conversationID, after, size+1)...)
		if err != nil {
			return err
		}
		runs, more, err = CollectBudget(rows, scanListedRun, func(r storeutil.NumberedRun) int { return len(r.UserMessage) })
		if err != nil || len(runs) == 0 {
			return err
		}
		keep = min(len(runs), size)
		used := 0
		for _, r := range runs[:keep] {
			used += len(r.UserMessage)
		}
		if more {
			used = store.PageBytes
		}
		// The runs' messages, whole: a run's transcript is not split
		// between pages. The page ends with the run whose messages reach
		// the budget.
		rows, err = q.Query(ctx, with+`SELECT `+messageCols+` FROM messages m JOIN runs r ON r.id = m.run_id
WHERE r.conversation_id = ? AND r.num > ? AND r.num <= ?`+onBranch+` ORDER BY r.num, m.created_at, m.id`,
			append(args, conversationID, after, runs[keep-1].Num)...)
		if err != nil {
			return err
		}
		var stop string
		if msgs, stop, used, err = collectMessages(rows, used); err != nil {
			return err
		}
		if stop != "" {
			keep, more = slices.IndexFunc(runs, func(r storeutil.NumberedRun) bool { return r.ID == stop }), true
		}
		// Their first events, while the budget lasts: the rest are
		// EventsAfter's (RunWithEvents.EventsTruncated). A row holding
		// the first events may hold later ones too, which
		// collectEvents drops.
		rows, err = q.Query(ctx, with+`SELECT e.run_id, e.seq, e.type, e.data, e.created_at
FROM runs r JOIN events e ON e.run_id = r.id
WHERE r.conversation_id = ? AND r.num > ? AND r.num <= ? AND `+rowsThrough+onBranch+` ORDER BY r.num, e.seq`,
			append(args, conversationID, after, runs[keep-1].Num, events, events)...)
		if err != nil {
			return err
		}
		evs, err = collectEvents(rows, int64(events), store.PageBytes-used)
		return err
	})
	if err != nil {
		return store.RunPage{}, err
	}
	page := storeutil.RunPage(runs, keep, evs, msgs)
	if more {
		page.NextCursor = storeutil.EncodeRunCursor(runs[keep-1].Num)
	}
	return page, nil
}

// collectMessages reads a page's messages, ordered by run, until the
// bytes of the page (used so far) reach store.PageBytes, and stops only
// between two runs: stop is the first run left out ("" for none). The
// first run's messages are always read. It closes rows.
func collectMessages(rows Rows, used int) (msgs []store.Message, stop string, _ int, err error) {
	defer rows.Close()
	msgs = []store.Message{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, "", 0, err
		}
		if last := len(msgs) - 1; last >= 0 && m.RunID != msgs[last].RunID && used >= store.PageBytes {
			return msgs, m.RunID, used, nil
		}
		used += len(m.Content) + len(m.Citations) + len(m.Meta)
		msgs = append(msgs, m)
	}
	return msgs, "", used, rows.Err()
}

// collectEvents reads the events numbered up to most of each run, while
// their bytes fit in budget. It closes rows.
func collectEvents(rows Rows, most int64, budget int) ([]store.Event, error) {
	evs := []store.Event{}
	err := eachEvent(rows, func(e store.Event) bool {
		if e.Seq > most {
			return true
		}
		if budget -= len(e.Data); budget < 0 {
			return false
		}
		evs = append(evs, e)
		return true
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// FinishRun implements store.Runs.
func (s *Store) FinishRun(ctx context.Context, runID string, end store.RunEnd) (store.Run, error) {
	if err := cmp.Or(end.Validate(), storeutil.CheckIDs(runID)); err != nil {
		return store.Run{}, s.errorf("finish run %s: %w", runID, err)
	}
	usage, err := json.Marshal(end.Usage)
	if err != nil {
		return store.Run{}, s.errorf("finish run %s: %w", runID, err)
	}
	var f *finished
	err = s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		var err error
		f, err = s.finishRun(ctx, q, runID, end, usage, 0, true)
		return err
	})
	if err == nil {
		err = f.read()
	}
	if err != nil {
		return store.Run{}, s.errorf("finish run %s as %s: %w", runID, end.Status, err)
	}
	return f.run, nil
}

// finished is what finishRun learns of the run it ends. The run and
// queued are read from statements sent with the transaction's next
// statement or its commit: they are there once read returns nil, after
// the transaction.
type finished struct {
	// run is the run as it ended, when finishRun was asked for it whole.
	run store.Run
	// conversation is the run's.
	conversation string
	// lastSeq is the last of the sequence numbers finishRun took.
	lastSeq int64
	// routed: a webhook route exists.
	routed bool
	// queued: messages wait in the conversation's queue, for the run's
	// end to start.
	queued bool
	// updated and touched report the reads of run and queued.
	updated, touched func() error
}

// read reports whether run and queued could be read.
func (f *finished) read() error { return cmp.Or(f.updated(), f.touched()) }

// finishRun is FinishRun's transaction, on q; usage is end.Usage
// encoded. It takes the run's next events sequence numbers, for EndRun
// to store its events under. whole reads the ended run back (FinishRun
// returns it; EndRun, which does not, spares the read).
//
// One locking read decides everything the transaction does: the run's
// row, locked until the commit, cannot change meanwhile, so its update
// cannot miss, and the statements after it (the run's, the usage's and
// the conversation's updates) need nothing from each other. On
// PostgreSQL they are held, and go with the commit: the end of a run is
// two round trips.
//
// The read locks the conversation's row too, before the run's row
// changes. StartRun and ResumeRun lock that row first and then make a
// run active, which waits on this run's row in the one-active-run index
// while this transaction has changed it; had this transaction locked the
// conversation only at its end, each would wait for the other, and
// PostgreSQL refused one as a deadlock (a chat answered 500 under load).
// A lock alone on the run's row makes no one wait: such a start fails at
// once with ErrRunActive.
func (s *Store) finishRun(ctx context.Context, q Querier, runID string, end store.RunEnd, usage []byte, events int, whole bool) (*finished, error) {
	at := storeutil.Now()
	now := s.db.Time(at)
	// The usage the run had when its stream last ended, and whether a
	// stretch of it is running: the usage record adds the difference,
	// and the stretch's tool calls only if one was running.
	// pending tells whether the run left a human request pending: most
	// runs leave none, and then the statements that would expire them
	// are spared. Only the run makes its requests, and it is ending.
	// routed tells whether any webhook route exists: most servers have
	// none, and then the run's events have no deliveries to record,
	// which EndRun would otherwise look up per event.
	var (
		before             []byte
		model, owner, user string
		status             store.RunStatus
		pending            bool
		f                  = &finished{}
	)
	err := q.QueryRow(ctx, `SELECT runs.usage, runs.model, runs.status, runs.owner, runs.user_id, runs.conversation_id, runs.last_seq, `+pendingHuman+`,
    EXISTS (SELECT 1 FROM webhook_routes) FROM runs JOIN conversations c ON c.id = runs.conversation_id WHERE runs.id = ?`+s.db.ForUpdate(), runID).
		Scan(&before, &model, &status, &owner, &user, &f.conversation, &f.lastSeq, &pending, &f.routed)
	switch {
	case noRows(err):
		return nil, store.ErrNotFound
	case err != nil:
		return nil, err
	case end.Owner != "" && owner != end.Owner:
		return nil, store.ErrNotOwner
	case status != store.RunRunning && status != store.RunInterrupted:
		return nil, fmt.Errorf("run has ended: %w", store.ErrConflict)
	}
	if status != store.RunRunning {
		end.ToolCalls = 0 // an end of a parked run, which made no call since it was parked
	}
	f.lastSeq += int64(events)
	const update = `UPDATE runs SET status = ?, interrupt_reason = ?, usage = ?, completed_at = ?, input = '', last_seq = ?
WHERE id = ?`
	args := []any{end.Status, end.Reason, string(usage), now, f.lastSeq, runID}
	if whole {
		f.updated = queryRowLater(ctx, q, update+` RETURNING `+RunCols, args, func(row Row) (err error) {
			f.run, err = ScanRun(row)
			return err
		})
	} else if err := execLater(ctx, q, update, args...); err != nil {
		return nil, err
	} else {
		f.updated = func() error { return nil }
	}
	if err := addUsage(ctx, q, user, model, at, before, end); err != nil {
		return nil, err
	}
	if end.Status.Final() && pending {
		for _, table := range humanTables {
			if err := execLater(ctx, q, `UPDATE `+table+` SET status = 'expired', resolved_at = ?
WHERE run_id = ? AND status = 'pending'`, now, runID); err != nil {
				return nil, err
			}
		}
	}
	// queued is read after the run's row is written, by a statement of
	// its own (on PostgreSQL, with a snapshot of its own): the start of
	// a message queued after that waits on the run's row for this
	// transaction, then finds no active run and goes ahead (see runs'
	// startOrEnqueue).
	f.touched = queryRowLater(ctx, q, `UPDATE conversations SET updated_at = ? WHERE id = ?
RETURNING EXISTS (SELECT 1 FROM queued_runs WHERE conversation_id = conversations.id)`, []any{now, f.conversation},
		func(row Row) error { return row.Scan(&f.queued) })
	return f, nil
}

// EndRun implements store.Runs: FinishRun's statements, then
// AppendEvents', in one transaction.
func (s *Store) EndRun(ctx context.Context, runID string, end store.RunEnd, nes []store.NewEvent) (store.RunEnded, error) {
	evRun, owner, tails, err := storeutil.Batch(nes)
	if err == nil && (evRun != runID || owner != end.Owner) {
		err = fmt.Errorf("%w: the events are of run %s, owner %q, not of run %s, owner %q", store.ErrInvalid, evRun, owner, runID, end.Owner)
	}
	err = cmp.Or(err, end.Validate(), storeutil.CheckIDs(runID))
	if err != nil {
		return store.RunEnded{}, s.errorf("end run %s: %w", runID, err)
	}
	usage, err := json.Marshal(end.Usage)
	if err != nil {
		return store.RunEnded{}, s.errorf("end run %s: %w", runID, err)
	}
	out := store.RunEnded{Events: newEvents(runID, nes)}
	var f *finished
	err = s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		// finishRun takes the events' numbers with the run's row, which
		// it checks the owner of and locks: what AppendEvents does
		// first is done, and the rows, which nothing reads back, can
		// go with the commit.
		var err error
		if f, err = s.finishRun(ctx, q, runID, end, usage, len(nes), false); err != nil {
			return err
		}
		Number(out.Events, f.lastSeq, tails)
		// The run's row is locked: its messages' run cannot go.
		if err := s.addMessagesLater(ctx, q, messagesOf(nes), f.conversation); err != nil {
			return err
		}
		err = InsertEventRows(ctx, q, out.Events, tails, s.db.Time(out.Events[0].CreatedAt))
		if err == nil && f.routed {
			err = s.recordDeliveries(ctx, q, out.Events)
		}
		return err
	})
	if err == nil {
		err = f.read()
	}
	if err != nil {
		return store.RunEnded{}, s.errorf("end run %s as %s with %d events (%s last): %w", runID, end.Status, len(nes), nes[len(nes)-1].Type, err)
	}
	out.Queued = f.queued
	return out, nil
}

// ResumeRun implements store.Runs.
func (s *Store) ResumeRun(ctx context.Context, runID, owner string) (store.Run, error) {
	if !store.ValidText(owner) {
		return store.Run{}, s.errorf("resume run: %w: owner is not valid UTF-8 or holds a NUL character", store.ErrInvalid)
	}
	if err := storeutil.CheckIDs(runID); err != nil {
		return store.Run{}, s.errorf("resume run: %w", err)
	}
	now := s.db.Time(storeutil.Now())
	var r store.Run
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		// The conversation's row is written, and so locked, first, as
		// StartRun's is. On PostgreSQL a check of the mark alone, in a
		// row this transaction does not write, let a delete's mark
		// (BeginDelete) and the resume pass each other: each read before
		// the other committed, the delete found the run parked and went
		// on to delete its state, and the run resumed on nothing. A run
		// of a conversation being deleted is as good as gone.
		n, err := q.Exec(ctx, `UPDATE conversations SET updated_at = ?
WHERE id = (SELECT conversation_id FROM runs WHERE id = ?) AND NOT deleting`, now, runID)
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		r, err = ScanRun(q.QueryRow(ctx, `UPDATE runs SET status = 'running', interrupt_reason = '', completed_at = NULL, owner = ?
WHERE id = ? AND status = 'interrupted' AND NOT superseded RETURNING `+RunCols, owner, runID))
		if s.db.Violates(err, "runs_one_active") {
			return store.ErrRunActive
		}
		if noRows(err) {
			return fmt.Errorf("run is not interrupted, or was superseded: %w", store.ErrConflict)
		}
		return err
	})
	if err != nil {
		return store.Run{}, s.errorf("resume run %s: %w", runID, err)
	}
	return r, nil
}

// ActiveUsers implements store.Runs.
func (s *Store) ActiveUsers(ctx context.Context) ([]string, error) {
	users, err := queryAll(ctx, s.db, scanString, `SELECT DISTINCT user_id FROM runs WHERE NOT superseded AND status IN ('running', 'interrupted') ORDER BY user_id`)
	if err != nil {
		return nil, s.errorf("active users: %w", err)
	}
	return users, nil
}
