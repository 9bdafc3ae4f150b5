package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/trellis-ai/trellis/runs"
)

// cancelWait bounds how long CancelTask waits for the run it cancelled
// to end.
const cancelWait = 30 * time.Second

// begun is a run a message started or resumed, to follow.
type begun struct {
	follow  runs.FollowRequest
	context string
}

// begin starts the run of a message, or answers what its task waits
// for and resumes it. A message to a task waiting for a clarifying
// answer starts the context's next run: that run is the task then.
func (h *Handler) begin(ctx context.Context, r *http.Request, t turn) (begun, error) {
	user := runs.UserFrom(ctx)
	svc := h.cfg.Runs
	if t.taskID != "" {
		rec, err := svc.RunRecord(ctx, user, t.taskID)
		if errors.Is(err, runs.ErrNotFound) {
			return begun{}, taskNotFound(t.taskID)
		}
		if err != nil {
			return begun{}, err
		}
		if t.contextID != "" && t.contextID != rec.ConversationID {
			return begun{}, invalidParams("task %s is not of context %s", t.taskID, t.contextID)
		}
		latest, err := h.latest(ctx, rec.ConversationID)
		if err != nil {
			return begun{}, err
		}
		switch {
		case rec.Status.Final() || clarified(rec, latest):
			return begun{}, unsupported("task %s is %s: send the next message without taskId, in its context", rec.ID,
				stateOf(rec, latest))
		case rec.Status == runs.RunRunning:
			return begun{}, unsupported("task %s is working: wait for it, or cancel it", rec.ID)
		case rec.InterruptReason == runs.KindClarification:
			t.contextID = rec.ConversationID
		case rec.InterruptReason == "":
			return begun{}, unsupported("task %s waits for the server to take it up again", rec.ID)
		default:
			return h.answer(ctx, user, rec, t)
		}
	}
	msg := t.message()
	if msg == "" {
		return begun{}, invalidParams("the message has no text")
	}
	conv := t.contextID
	if conv != "" {
		c, err := svc.OpenConversation(ctx, user, conv, msg)
		if errors.Is(err, runs.ErrNotFound) {
			return begun{}, &rpcError{Code: codeTaskNotFound, Status: http.StatusNotFound, Reason: "not_found",
				Message: "no context " + conv + ", or it is not yours"}
		}
		if err != nil {
			return begun{}, err
		}
		conv = c.ID
	}
	rn, sub, err := svc.Start(ctx, runs.StartRequest{UserID: user, ConversationID: conv, RequestID: r.Header.Get("X-Request-Id"),
		Input: runs.Input{Message: msg}})
	if err != nil {
		return begun{}, err
	}
	return begun{context: rn.ConversationID(), follow: runs.FollowRequest{User: user, ConversationID: rn.ConversationID(),
		RunID: rn.ID(), Sub: sub}}, nil
}

// answer answers what the parked run rec waits for with the message,
// and resumes it: every approval and call that may have run is
// approved or rejected as the message says, a tool's question answered
// with its data.
func (h *Handler) answer(ctx context.Context, user string, rec runs.RunRecord, t turn) (begun, error) {
	svc := h.cfg.Runs
	var ids []string
	for _, kind := range []runs.HumanKind{runs.KindApproval, runs.KindUncertainCall, runs.KindElicitation} {
		w, err := svc.Waiting(ctx, kind, user, rec.ConversationID, rec.ID)
		if err != nil {
			return begun{}, err
		}
		for _, hr := range w {
			ids = append(ids, hr.ID)
		}
	}
	if len(ids) == 0 {
		return begun{}, unsupported("task %s waits for nothing a message answers", rec.ID)
	}
	a, err := svc.Answer(ctx, runs.AnswerRequest{User: user, ConversationID: rec.ConversationID, IDs: ids,
		Decide: func(_ int, hr runs.HumanRequest) (runs.Answer, error) {
			if hr.Kind == runs.KindElicitation {
				e, err := t.elicitation()
				return runs.Answer{Elicitation: e}, err
			}
			approve, reason, err := t.decision()
			switch {
			case err != nil:
				return runs.Answer{}, err
			case hr.Kind == runs.KindUncertainCall && approve:
				return runs.Answer{Call: runs.CallAnswer{Decision: runs.CallRetry}}, nil
			case hr.Kind == runs.KindUncertainCall:
				return runs.Answer{Call: runs.CallAnswer{Decision: runs.CallSkip}}, nil
			case approve:
				return runs.Answer{Approval: runs.ApprovalAnswer{Decision: runs.DecisionApprove}}, nil
			}
			return runs.Answer{Approval: runs.ApprovalAnswer{Decision: runs.DecisionReject, Reason: reason}}, nil
		}})
	if err != nil {
		return begun{}, err
	}
	return begun{context: rec.ConversationID, follow: a.Follow}, nil
}

// started begins the run of a message decoded as t, unless decoding it
// failed with err; on an error it answers the request and reports false.
func (h *Handler) started(w http.ResponseWriter, r *http.Request, id json.RawMessage, t turn, err error) (begun, bool) {
	var b begun
	if err == nil {
		b, err = h.begin(r.Context(), r, t)
	}
	if err != nil {
		h.writeError(w, r, id, err)
		return begun{}, false
	}
	return b, true
}

// sendMessage is SendMessage: it waits for the task to end or to need
// input (or, with returnImmediately, not at all) and answers the task.
// A client that goes away leaves the task going.
func (h *Handler) sendMessage(w http.ResponseWriter, r *http.Request, id, params json.RawMessage) {
	ctx := r.Context()
	t, err := decodeTurn(params)
	if err == nil && t.immediate && t.taskID != "" {
		err = invalidParams("configuration.returnImmediately is for a new task's message")
	}
	b, ok := h.started(w, r, id, t, err)
	if !ok {
		return
	}
	defer b.follow.Sub.Close()
	if t.immediate {
		// The run goes on without a follower; its task is polled.
		writeResult(w, id, map[string]task{"task": {ID: b.follow.RunID, ContextID: b.context,
			Status: taskStatus{State: stateSubmitted, Timestamp: timestamp(time.Now())}, History: h.history(t.message(), b.follow.RunID, t.history)}})
		return
	}
	f := b.follow
	f.Rejoin, f.OnDisconnect = true, runs.DisconnectKeep
	bl := newBuilder(f.RunID, b.context, nil)
	_, err = h.cfg.Runs.Follow(ctx, f, bl.event)
	if err == nil && bl.end == 0 {
		err = errors.New("the run's events ended before it did")
	}
	var out task
	if err == nil {
		out, err = h.replay(ctx, f.RunID, b.context, bl.end-1, t.history, true)
	}
	h.reply(w, r, id, map[string]task{"task": out}, err)
}

// sendStreamingMessage is SendStreamingMessage: the task, then its
// status and answer as they change, to its end or its need of input.
func (h *Handler) sendStreamingMessage(w http.ResponseWriter, r *http.Request, id, params json.RawMessage) {
	t, err := decodeTurn(params)
	b, ok := h.started(w, r, id, t, err)
	if !ok {
		return
	}
	defer b.follow.Sub.Close()
	h.follow(w, r, id, b.follow, b.context, 0)
}

// follow streams the run f follows as its task, from its Begin to the
// end of its segment.
func (h *Handler) follow(w http.ResponseWriter, r *http.Request, id json.RawMessage, f runs.FollowRequest, contextID string, through int64) {
	ctx := r.Context()
	sw, emit := h.stream(w, id)
	bl := newBuilder(f.RunID, contextID, emit)
	bl.through, f.Through = through, through
	f.Begin, f.Heartbeat, f.Idle, f.Gone = bl.begin, h.cfg.Heartbeat, sw.Ping, sw.Failed
	f.Rejoin, f.OnDisconnect = true, runs.DisconnectKeep
	_, err := h.cfg.Runs.Follow(ctx, f, bl.event)
	if bl.end == 0 && ctx.Err() == nil && !sw.Failed() {
		h.log.LogAttrs(ctx, slog.LevelWarn, "an A2A stream ended before its task", slog.String("run_id", f.RunID), slog.Any("error", err))
		_ = sw.JSON(0, "", response{JSONRPC: "2.0", ID: id, Error: (&rpcError{Code: codeInternal,
			Message: "the stream broke off; the task goes on: SubscribeToTask or GetTask"}).body()})
	}
}

// replay builds the task of the user's run from its stored events, to
// the first end of a segment after the event through.
func (h *Handler) replay(ctx context.Context, runID, contextID string, through int64, history int, artifacts bool) (task, error) {
	svc := h.cfg.Runs
	user := runs.UserFrom(ctx)
	sub := svc.Subscribe(runID, false)
	defer sub.Close()
	rec, err := svc.RunRecord(ctx, user, runID)
	if err != nil {
		return task{}, err
	}
	bl := newBuilder(runID, contextID, nil)
	bl.through = through
	if _, err := svc.Follow(ctx, runs.FollowRequest{User: user, ConversationID: contextID, RunID: runID, Sub: sub,
		Replay: true, Rejoin: true, Through: through, OnDisconnect: runs.DisconnectKeep}, bl.event); err != nil {
		return task{}, err
	}
	out := bl.task(h.history(rec.UserMessage, runID, history))
	if !artifacts {
		out.Artifacts = nil
	}
	return out, nil
}

// history is a task's history: the user's message, unless n is 0.
func (h *Handler) history(msg, runID string, n int) []message {
	if n == 0 {
		return nil
	}
	return []message{{MessageID: runID + "-message", TaskID: runID, Role: roleUser, Parts: []part{textPart(msg)}}}
}

// taskOf is the task of the user's run rec as it stands: a working one
// from the record (its answer comes with its end), any other from its
// events.
func (h *Handler) taskOf(ctx context.Context, rec runs.RunRecord, history int, artifacts bool) (task, error) {
	if rec.Status == runs.RunRunning {
		return task{ID: rec.ID, ContextID: rec.ConversationID, Status: taskStatus{State: stateWorking},
			History: h.history(rec.UserMessage, rec.ID, history)}, nil
	}
	through, err := h.cfg.Runs.LastInterrupt(ctx, runs.UserFrom(ctx), rec.ID)
	if err != nil {
		return task{}, err
	}
	if rec.Status == runs.RunInterrupted {
		through-- // its last run.interrupted is where it stands
	}
	out, err := h.replay(ctx, rec.ID, rec.ConversationID, through, history, artifacts)
	if err != nil {
		return task{}, err
	}
	if rec.InterruptReason == runs.KindClarification {
		latest, err := h.latest(ctx, rec.ConversationID)
		if err != nil {
			return task{}, err
		}
		// Its question stays the status message.
		out.Status.State = stateOf(rec, latest)
	}
	return out, nil
}

// stateOf is the state of the run rec, as the record has it, latest
// being the id of its context's latest run: a run parked on a
// clarifying question that a later run answered has completed.
func stateOf(rec runs.RunRecord, latest string) string {
	if clarified(rec, latest) {
		return stateCompleted
	}
	switch rec.Status {
	case runs.RunCompleted:
		return stateCompleted
	case runs.RunFailed:
		return stateFailed
	case runs.RunCancelled:
		return stateCanceled
	case runs.RunInterrupted:
		if rec.InterruptReason != "" {
			return stateInputRequired
		}
	}
	return stateWorking
}

// clarified reports whether rec is a run parked on a clarifying
// question that the context's next run, not rec but latest, answered.
func clarified(rec runs.RunRecord, latest string) bool {
	return rec.Status == runs.RunInterrupted && rec.InterruptReason == runs.KindClarification && latest != rec.ID
}

// latest is the id of the latest run of the user's context.
func (h *Handler) latest(ctx context.Context, contextID string) (string, error) {
	l, err := h.cfg.Runs.LatestRun(ctx, runs.UserFrom(ctx), contextID)
	return l.ID, err
}

// record reads the user's run a task id names.
func (h *Handler) record(ctx context.Context, params json.RawMessage) (runs.RunRecord, taskRequest, error) {
	var req taskRequest
	if err := decodeParams(params, &req, "{id}"); err != nil {
		return runs.RunRecord{}, req, err
	}
	if req.ID == "" {
		return runs.RunRecord{}, req, invalidParams("id (the task's) is required")
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return runs.RunRecord{}, req, invalidParams("historyLength must not be negative")
	}
	rec, err := h.cfg.Runs.RunRecord(ctx, runs.UserFrom(ctx), req.ID)
	if errors.Is(err, runs.ErrNotFound) {
		return rec, req, taskNotFound(req.ID)
	}
	return rec, req, err
}

func historyLength(n *int) int {
	if n == nil {
		return -1
	}
	return *n
}

// getTask is GetTask.
func (h *Handler) getTask(w http.ResponseWriter, r *http.Request, id, params json.RawMessage) {
	ctx := r.Context()
	rec, req, err := h.record(ctx, params)
	var out task
	if err == nil {
		out, err = h.taskOf(ctx, rec, historyLength(req.HistoryLength), true)
	}
	h.reply(w, r, id, out, err)
}

// cancelTask is CancelTask: the run is cancelled as the user's cancel
// cancels it, and the task answered once it has ended.
func (h *Handler) cancelTask(w http.ResponseWriter, r *http.Request, id, params json.RawMessage) {
	ctx := r.Context()
	user := runs.UserFrom(ctx)
	svc := h.cfg.Runs
	rec, req, err := h.record(ctx, params)
	if err != nil {
		h.writeError(w, r, id, err)
		return
	}
	notCancelable := &rpcError{Code: codeNotCancelable, Status: http.StatusBadRequest,
		Message: fmt.Sprintf("task %s has ended and cannot be cancelled", rec.ID)}
	if rec.Status.Final() {
		h.writeError(w, r, id, notCancelable)
		return
	}
	sub := svc.Subscribe(rec.ID, false)
	defer sub.Close()
	// Read again once subscribed: its end comes after this.
	if rec, err = svc.RunRecord(ctx, user, rec.ID); err == nil {
		var latest runs.RunRecord
		latest, err = svc.LatestRun(ctx, user, rec.ConversationID)
		if err == nil && (latest.ID != rec.ID || rec.Status.Final()) {
			err = notCancelable
		}
	}
	if err == nil {
		_, err = svc.Cancel(ctx, user, rec.ConversationID)
		if errors.Is(err, runs.ErrNothingToRun) {
			err = notCancelable
		}
	}
	var end int64
	if err == nil {
		wait, cancel := context.WithTimeout(ctx, cancelWait)
		bl := newBuilder(rec.ID, rec.ConversationID, nil)
		_, err = svc.Follow(wait, runs.FollowRequest{User: user, ConversationID: rec.ConversationID, RunID: rec.ID, Sub: sub,
			After: rec.LastSeq, Replay: true, Rejoin: true, OnDisconnect: runs.DisconnectKeep}, bl.event)
		cancel()
		end = bl.end
	}
	var out task
	if err == nil {
		out, err = h.replay(ctx, rec.ID, rec.ConversationID, end-1, historyLength(req.HistoryLength), true)
	}
	h.reply(w, r, id, out, err)
}

// subscribeToTask is SubscribeToTask: a working task's stream from its
// start (so its answer comes whole), to its end or its need of input;
// a task that waits for input is sent as it stands.
func (h *Handler) subscribeToTask(w http.ResponseWriter, r *http.Request, id, params json.RawMessage) {
	ctx := r.Context()
	svc := h.cfg.Runs
	rec, _, err := h.record(ctx, params)
	if err == nil && rec.Status.Final() {
		err = unsupported("task %s has ended: GetTask reads it", rec.ID)
	}
	if err != nil {
		h.writeError(w, r, id, err)
		return
	}
	if rec.Status == runs.RunInterrupted {
		t, err := h.taskOf(ctx, rec, -1, true)
		if err != nil {
			h.writeError(w, r, id, err)
			return
		}
		_, emit := h.stream(w, id)
		_ = emit(streamResponse{Task: &t})
		return
	}
	sub := svc.Subscribe(rec.ID, false)
	defer sub.Close()
	through, err := svc.LastInterrupt(ctx, runs.UserFrom(ctx), rec.ID)
	if err != nil {
		h.writeError(w, r, id, err)
		return
	}
	h.follow(w, r, id, runs.FollowRequest{User: runs.UserFrom(ctx), ConversationID: rec.ConversationID, RunID: rec.ID, Sub: sub,
		Replay: true}, rec.ConversationID, through)
}

// Page sizes of ListTasks.
const (
	defaultPageSize = 50
	maxPageSize     = 100
	// maxListed bounds the runs of a context ListTasks reads.
	maxListed = 10 * runs.MaxRuns
)

// listTasks is ListTasks: the tasks of one context, most recently
// updated first.
func (h *Handler) listTasks(w http.ResponseWriter, r *http.Request, id, params json.RawMessage) {
	ctx := r.Context()
	out, err := h.list(ctx, params)
	h.reply(w, r, id, out, err)
}

func (h *Handler) list(ctx context.Context, params json.RawMessage) (listTasksResponse, error) {
	var req listTasksRequest
	if err := decodeParams(params, &req, "a ListTasksRequest {contextId, …}"); err != nil {
		return listTasksResponse{}, err
	}
	size := defaultPageSize
	if req.PageSize != nil {
		size = *req.PageSize
	}
	offset, err := strconv.Atoi(req.PageToken)
	switch {
	case req.ContextID == "":
		return listTasksResponse{}, invalidParams("contextId is required: Trellis lists the tasks of one context")
	case size < 1 || size > maxPageSize:
		return listTasksResponse{}, invalidParams("pageSize must be 1 to %d", maxPageSize)
	case req.PageToken == "":
		offset = 0
	case err != nil || offset < 0:
		return listTasksResponse{}, invalidParams("pageToken is not one this server gave")
	case req.HistoryLength != nil && *req.HistoryLength < 0:
		return listTasksResponse{}, invalidParams("historyLength must not be negative")
	}
	var after time.Time
	if req.StatusTimestampAfter != "" {
		if after, err = time.Parse(time.RFC3339Nano, req.StatusTimestampAfter); err != nil {
			return listTasksResponse{}, invalidParams("statusTimestampAfter is not an RFC 3339 timestamp")
		}
	}
	if req.Status != "" && req.Status != "TASK_STATE_UNSPECIFIED" && !slices.Contains(states, req.Status) {
		return listTasksResponse{}, invalidParams("status is not a task state")
	}
	user := runs.UserFrom(ctx)
	svc := h.cfg.Runs
	if _, err := svc.Conversation(ctx, user, req.ContextID); err != nil {
		if errors.Is(err, runs.ErrNotFound) || errors.Is(err, runs.ErrInvalid) {
			return listTasksResponse{}, &rpcError{Code: codeTaskNotFound, Status: http.StatusNotFound, Reason: "not_found",
				Message: "no context " + req.ContextID + ", or it is not yours"}
		}
		return listTasksResponse{}, err
	}
	var all []runs.RunRecord
	for q := (runs.RunQuery{Limit: runs.MaxRuns, EventLimit: 1}); len(all) < maxListed; {
		p, err := svc.RunRecords(ctx, user, req.ContextID, q)
		if err != nil {
			return listTasksResponse{}, err
		}
		for _, rec := range p.Runs {
			all = append(all, rec.Run)
		}
		if q.Cursor = p.NextCursor; q.Cursor == "" {
			break
		}
	}
	latest, err := h.latest(ctx, req.ContextID)
	if err != nil && !errors.Is(err, runs.ErrNotFound) {
		return listTasksResponse{}, err
	}
	var recs []runs.RunRecord
	for _, rec := range all {
		if (req.Status == "" || req.Status == "TASK_STATE_UNSPECIFIED" || stateOf(rec, latest) == req.Status) &&
			!updated(rec).Before(after) {
			recs = append(recs, rec)
		}
	}
	slices.SortStableFunc(recs, func(a, b runs.RunRecord) int { return updated(b).Compare(updated(a)) })
	out := listTasksResponse{Tasks: []task{}, PageSize: size, TotalSize: len(recs)}
	if offset < len(recs) {
		page := recs[offset:min(offset+size, len(recs))]
		for _, rec := range page {
			t, err := h.listed(ctx, rec, latest, historyLength(req.HistoryLength), req.IncludeArtifacts)
			if err != nil {
				return listTasksResponse{}, err
			}
			out.Tasks = append(out.Tasks, t)
		}
		if offset+size < len(recs) {
			out.NextPageToken = strconv.Itoa(offset + size)
		}
	}
	return out, nil
}

// listed is a task of a list: from the record, or from its events when
// its artifacts are asked for.
func (h *Handler) listed(ctx context.Context, rec runs.RunRecord, latest string, history int, artifacts bool) (task, error) {
	if artifacts {
		return h.taskOf(ctx, rec, history, true)
	}
	return task{ID: rec.ID, ContextID: rec.ConversationID, Status: taskStatus{State: stateOf(rec, latest), Timestamp: timestamp(updated(rec))},
		History: h.history(rec.UserMessage, rec.ID, history)}, nil
}

// updated is when the run's status last changed, as far as the record
// tells.
func updated(rec runs.RunRecord) time.Time {
	if rec.CompletedAt != nil {
		return *rec.CompletedAt
	}
	return rec.CreatedAt
}

// states are the task states a filter may name.
var states = []string{stateSubmitted, stateWorking, stateCompleted, stateFailed, stateCanceled, stateInputRequired,
	"TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED"}
