package langgraph

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/runs"
)

// run is a Trellis run as LangGraph's.
type run struct {
	RunID             string         `json:"run_id"`
	ThreadID          string         `json:"thread_id"`
	AssistantID       string         `json:"assistant_id"`
	Status            string         `json:"status"`
	CreatedAt         string         `json:"created_at"`
	UpdatedAt         string         `json:"updated_at"`
	Metadata          map[string]any `json:"metadata"`
	MultitaskStrategy string         `json:"multitask_strategy"`
	Kwargs            map[string]any `json:"kwargs"`
}

// runStatus maps a run's status: a cancelled run is interrupted, as the
// Agent Server reports it.
func runStatus(s runs.RunStatus) string {
	switch s {
	case runs.RunRunning:
		return "running"
	case runs.RunCompleted:
		return "success"
	case runs.RunFailed:
		return "error"
	}
	return "interrupted"
}

func runOf(r runs.RunRecord) run {
	updated := r.CreatedAt
	if r.CompletedAt != nil {
		updated = *r.CompletedAt
	}
	return run{RunID: r.ID, ThreadID: r.ConversationID, AssistantID: graphID, Status: runStatus(r.Status),
		CreatedAt: timestamp(r.CreatedAt), UpdatedAt: timestamp(updated), Metadata: map[string]any{},
		MultitaskStrategy: "reject", Kwargs: map[string]any{}}
}

// pendingRunOf is a message queued behind the thread's run as
// LangGraph's pending run.
func pendingRunOf(q runs.QueuedRun) run {
	at := timestamp(q.CreatedAt)
	return run{RunID: q.ID, ThreadID: q.ConversationID, AssistantID: graphID, Status: "pending", CreatedAt: at, UpdatedAt: at,
		Metadata: map[string]any{}, MultitaskStrategy: string(runs.MultitaskEnqueue), Kwargs: map[string]any{}}
}

// begun is a run a request started or resumed, subscribed to.
type begun struct {
	// queued is the message that waits behind the thread's run
	// (multitask_strategy enqueue); no run is subscribed to yet.
	queued *runs.QueuedRun
	spec   runSpec
	conv   runs.Conversation
	runID  string
	sub    *runs.Subscription
	follow runs.FollowRequest
	tr     *translator
}

// begin starts the run a request asks for: a new message on the thread,
// or the answers to the approvals it waits on. The caller closes
// b.sub. awaitsEnd: the caller reads a new run's events only once it
// ends (runs/wait; see runs.StartRequest.AwaitsEnd).
func (h *handler) begin(w http.ResponseWriter, r *http.Request, awaitsEnd bool) (_ *begun, err error) {
	raw, err := body(r)
	if err != nil {
		return nil, err
	}
	spec, err := parseRun(raw)
	if err != nil {
		return nil, err
	}
	if err := checkAssistant(spec.assistant); err != nil {
		return nil, err
	}
	if err := runs.CheckContext(spec.context); err != nil {
		return nil, err
	}
	ctx := r.Context()
	c, err := h.conversation(r)
	if err != nil {
		return nil, err
	}
	snap, err := h.runs.State(ctx, c.ID)
	if err != nil && !errors.Is(err, runs.ErrNoConversation) {
		return nil, err
	}
	b := &begun{spec: spec, conv: c}
	state := func() (runs.Snapshot, error) { return h.runs.State(context.WithoutCancel(ctx), c.ID) }
	if spec.answers != nil {
		return b, h.resume(ctx, b, snap, state)
	}
	defer func() {
		if err == nil {
			h.tag(ctx, c)
		}
	}()
	turn := snap.State.Turn + 1
	for _, p := range snap.Pending {
		if p.Kind == events.PendingClarification {
			turn = snap.State.Turn // the message answers the question, in its turn
		}
	}
	spec.message = strings.TrimSpace(spec.message)
	if err := h.runs.CheckMessage(spec.message); err != nil {
		return nil, err
	}
	prior := snap.State.Messages
	if spec.multitask == runs.MultitaskRollback {
		// The run rolled back takes its turn's messages with it, and the
		// message runs in that turn.
		if last, err := h.runs.LatestRun(ctx, c.UserID, c.ID); err == nil && last.Active() && last.RequestID == snap.State.Input.RequestID {
			turn = snap.State.Turn
			prior = slices.DeleteFunc(slices.Clone(prior), func(m runs.Message) bool { return m.Turn >= turn })
		}
	}
	reqID := w.Header().Get("X-Request-Id")
	if reqID == "" {
		reqID = ids.Random("req_", 8)
	}
	rn, sub, err := h.runs.Start(ctx, runs.StartRequest{UserID: user(r), ConversationID: c.ID, RequestID: reqID,
		Input: runs.Input{Message: spec.message, Context: spec.context}, AwaitsEnd: awaitsEnd, Multitask: spec.multitask})
	if q, ok := errors.AsType[*runs.QueuedError](err); ok {
		b.queued = &q.Queued
		return b, nil
	}
	if err != nil {
		return nil, err
	}
	b.runID, b.sub = rn.ID(), sub
	b.follow = runs.FollowRequest{User: user(r), ConversationID: c.ID, RunID: rn.ID(), Sub: sub, OnDisconnect: spec.onDisconnect}
	b.tr = newTranslator(c.ID, rn.ID(), spec.modes, turn, prior, spec.message, state)
	return b, nil
}

// beginFollow begins the run a request asks for (begin) and, when its
// message was queued behind the thread's run, waits for it to start
// (awaitQueued); false when it answered the request already.
func (h *handler) beginFollow(w http.ResponseWriter, r *http.Request, awaitsEnd bool) (*begun, bool) {
	b, err := h.begin(w, r, awaitsEnd)
	if err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	if b.queued != nil && !h.awaitQueued(w, r, b) {
		return nil, false
	}
	return b, true
}

// awaitQueued waits for b's queued message to start, and sets b to
// follow its run from its first event, as a join does; false when the
// client left first or the message was cancelled (answered then).
func (h *handler) awaitQueued(w http.ResponseWriter, r *http.Request, b *begun) bool {
	rn, err := h.runs.AwaitQueued(r.Context(), b.conv.UserID, b.queued.ID)
	if err != nil {
		if r.Context().Err() == nil {
			h.fail(w, r, err)
		}
		return false
	}
	b.tr, b.sub = h.joiner(r, rn, b.spec.modes)
	b.runID = rn.ID
	b.follow = runs.FollowRequest{User: rn.UserID, ConversationID: rn.ConversationID, RunID: rn.ID, Sub: b.sub, Replay: true,
		OnDisconnect: b.spec.onDisconnect}
	return true
}

// tag records the graph in the metadata of a thread a run started on,
// for threads/search (agent-chat-ui lists a graph's threads by it). A
// run that could not start leaves the thread as it was.
func (h *handler) tag(ctx context.Context, c runs.Conversation) {
	if _, err := h.mergeMetadata(ctx, c, map[string]any{"graph_id": graphID, "assistant_id": graphID}); err != nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "langgraph: recording the thread's graph failed", slog.String("thread_id", c.ID), slog.Any("error", err))
	}
}

// resume answers the thread's pending approvals and calls that may have
// run with the decisions, in order, and follows the run they resume from
// its run.interrupted on. For a call that may have run, approve runs it
// again and reject skips it.
func (h *handler) resume(ctx context.Context, b *begun, snap runs.Snapshot, state func() (runs.Snapshot, error)) error {
	var ids []string
	for _, p := range snap.Pending {
		switch p.Kind {
		case events.PendingApproval:
			ids = append(ids, p.ID)
		case events.PendingUncertainCall:
			ids = append(ids, p.UncertainCallID)
		}
	}
	if len(ids) == 0 {
		return errorf(http.StatusConflict, "nothing_to_resume", "the thread waits for no approval; send input instead")
	}
	if len(b.spec.answers) != len(ids) {
		return httperr.Invalid("%d decisions for %d action requests; give one decision per action request, in order", len(b.spec.answers), len(ids))
	}
	a, err := h.runs.Answer(ctx, runs.AnswerRequest{User: b.conv.UserID, ConversationID: b.conv.ID, IDs: ids,
		Decide: func(i int, hr runs.HumanRequest) (runs.Answer, error) {
			if hr.Kind != runs.KindUncertainCall {
				return runs.Answer{Approval: b.spec.answers[i]}, nil
			}
			switch b.spec.answers[i].Decision {
			case runs.DecisionApprove:
				return runs.Answer{Call: runs.CallAnswer{Decision: runs.CallRetry}}, nil
			case runs.DecisionReject:
				return runs.Answer{Call: runs.CallAnswer{Decision: runs.CallSkip}}, nil
			}
			return runs.Answer{}, httperr.Invalid("decision %d: a call that may have run is approved (run again) or rejected (skipped), not edited", i)
		}})
	if err != nil {
		return err
	}
	b.runID, b.sub, b.follow = a.Follow.RunID, a.Follow.Sub, a.Follow
	b.follow.OnDisconnect = b.spec.onDisconnect
	b.tr = newTranslator(b.conv.ID, b.runID, b.spec.modes, snap.State.Turn, snap.State.Messages, "", state)
	return nil
}

// streamRun is POST /threads/{id}/runs/stream.
func (h *handler) streamRun(w http.ResponseWriter, r *http.Request) {
	b, ok := h.beginFollow(w, r, false)
	if !ok {
		return
	}
	defer b.sub.Close()
	sw := startStream(w, b.conv.ID, b.runID, b.spec.modes, h.cfg.WriteTimeout)
	b.follow.Begin = func() error {
		return sw.JSON(0, "metadata", map[string]any{"run_id": b.runID, "thread_id": b.conv.ID, "attempt": 1})
	}
	b.follow.Heartbeat, b.follow.Idle = h.cfg.Heartbeat, heartbeat(sw)
	if !h.follow(r.Context(), b.follow, b.tr, 0, func(ev sseEvent, id int64) error { return sw.JSON(id, ev.name, ev.data) }) {
		h.streamLost(r, sw, b.runID)
	}
}

// waitRun is POST /threads/{id}/runs/wait: the final values, as JSON.
func (h *handler) waitRun(w http.ResponseWriter, r *http.Request) {
	b, ok := h.beginFollow(w, r, true)
	if !ok {
		return
	}
	defer b.sub.Close()
	b.follow.Rejoin = true
	b.tr.modes = 0
	h.awaitFinal(w, r, b.follow, b.tr)
}

// awaitFinal follows a run to its end, streaming nothing, and answers
// its final values as runs/wait and join do; nothing when the client
// left first.
func (h *handler) awaitFinal(w http.ResponseWriter, r *http.Request, req runs.FollowRequest, tr *translator) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	if !h.follow(r.Context(), req, tr, 0, func(sseEvent, int64) error { return nil }) && r.Context().Err() != nil {
		return
	}
	if tr.failed != nil {
		jsonbody.Write(w, http.StatusOK, map[string]any{"__error__": map[string]string{"error": tr.failed.Code, "message": tr.failed.Message}})
		return
	}
	jsonbody.Write(w, http.StatusOK, tr.final)
}

// backgroundRun is POST /threads/{id}/runs: the run starts and is
// answered at once.
func (h *handler) backgroundRun(w http.ResponseWriter, r *http.Request) {
	b, err := h.begin(w, r, false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if b.queued != nil {
		jsonbody.Write(w, http.StatusOK, pendingRunOf(*b.queued))
		return
	}
	b.sub.Close()
	rn, err := h.runs.RunRecord(r.Context(), b.conv.UserID, b.runID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, runOf(rn))
}

// threadRun returns the run the path names, of the thread it names: 404
// for another thread's run or another user's.
func (h *handler) threadRun(r *http.Request) (runs.RunRecord, error) {
	rn, err := h.runs.RunRecord(r.Context(), user(r), chi.URLParam(r, "run_id"))
	if err == nil && rn.ConversationID != chi.URLParam(r, "thread_id") {
		err = runs.ErrNotFound
	}
	return rn, err
}

// queuedRun returns the message queued on the thread the path names as
// the run it names (a pending run); runs.ErrNotFound when there is none.
func (h *handler) queuedRun(r *http.Request) (runs.QueuedRun, error) {
	q, err := h.runs.Queued(r.Context(), user(r), chi.URLParam(r, "run_id"))
	if err == nil && q.ConversationID != chi.URLParam(r, "thread_id") {
		err = runs.ErrNotFound
	}
	return q, err
}

// startedRun is threadRun for a request that waits for the run: a
// pending run is waited for until it starts.
func (h *handler) startedRun(r *http.Request) (runs.RunRecord, error) {
	rn, err := h.threadRun(r)
	if !errors.Is(err, runs.ErrNotFound) {
		return rn, err
	}
	q, qerr := h.queuedRun(r)
	if qerr != nil {
		return rn, err
	}
	return h.runs.AwaitQueued(r.Context(), q.UserID, q.ID)
}

func (h *handler) getRun(w http.ResponseWriter, r *http.Request) {
	rn, err := h.threadRun(r)
	if errors.Is(err, runs.ErrNotFound) {
		if q, qerr := h.queuedRun(r); qerr == nil {
			jsonbody.Write(w, http.StatusOK, pendingRunOf(q))
			return
		}
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, runOf(rn))
}

// listRuns is GET /threads/{id}/runs: newest first, ?limit (10) and
// ?offset.
func (h *handler) listRuns(w http.ResponseWriter, r *http.Request) {
	c, err := h.conversation(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var limit *int
	offset := 0
	q := r.URL.Query()
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			h.fail(w, r, httperr.Invalid("limit must be a number"))
			return
		}
		limit = &n
	}
	if s := q.Get("offset"); s != "" {
		if offset, err = strconv.Atoi(s); err != nil {
			h.fail(w, r, httperr.Invalid("offset must be a number"))
			return
		}
	}
	n, offset, err := page(limit, offset, 10, 1000)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var all []run
	cursor := ""
	for {
		p, err := h.runs.RunRecords(r.Context(), c.UserID, c.ID, runs.RunQuery{Limit: runs.MaxRuns, Cursor: cursor, EventLimit: 1})
		if err != nil {
			h.fail(w, r, err)
			return
		}
		for _, rw := range p.Runs {
			all = append(all, runOf(rw.Run))
		}
		// The store pages oldest first; only the newest offset+n are
		// kept, so what is held is bounded by the answer, not the thread.
		if keep := offset + n; len(all) > keep {
			all = append(all[:0], all[len(all)-keep:]...)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	slices.Reverse(all)
	all = all[min(offset, len(all)):]
	out := append([]run{}, all[:min(n, len(all))]...)
	jsonbody.Write(w, http.StatusOK, out)
}

// joinRun is GET /threads/{id}/runs/{run_id}/join: the final values once
// the run ends (at once for one that has).
func (h *handler) joinRun(w http.ResponseWriter, r *http.Request) {
	rn, err := h.startedRun(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	tr, sub := h.joiner(r, rn, 0)
	defer sub.Close()
	h.awaitFinal(w, r, runs.FollowRequest{User: rn.UserID, ConversationID: rn.ConversationID, RunID: rn.ID, Sub: sub, Replay: true, Rejoin: true}, tr)
}

// joiner subscribes to a run to follow it from its first event, with a
// translator that starts from the thread's messages before the run's
// turn (the run's turn is the thread's latest, or the next one when the
// run has not yet stored its first step).
func (h *handler) joiner(r *http.Request, rn runs.RunRecord, m modes) (*translator, *runs.Subscription) {
	sub := h.runs.Subscribe(rn.ID, false)
	ctx := context.WithoutCancel(r.Context())
	snap, _ := h.runs.State(ctx, rn.ConversationID)
	turn := snap.State.Turn
	if snap.State.Input.RequestID != rn.RequestID {
		turn++
	}
	prior := slices.DeleteFunc(slices.Clone(snap.State.Messages), func(m runs.Message) bool { return m.Turn >= turn })
	state := func() (runs.Snapshot, error) { return h.runs.State(ctx, rn.ConversationID) }
	return newTranslator(rn.ConversationID, rn.ID, m, turn, prior, rn.UserMessage, state), sub
}

// joinStream is GET /threads/{id}/runs/{run_id}/stream: the run's
// stream, from its start or after Last-Event-ID, in the modes of
// ?stream_mode (values when absent).
func (h *handler) joinStream(w http.ResponseWriter, r *http.Request) {
	rn, err := h.startedRun(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	m, err := parseModes(r.URL.Query()["stream_mode"])
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var last int64
	if s := r.Header.Get("Last-Event-ID"); s != "" {
		if last, err = strconv.ParseInt(s, 10, 64); err != nil || last < 0 {
			h.fail(w, r, httperr.Invalid("Last-Event-ID must be an event id this server sent"))
			return
		}
	}
	tr, sub := h.joiner(r, rn, m)
	defer sub.Close()
	sw := startStream(w, rn.ConversationID, rn.ID, m, h.cfg.WriteTimeout)
	if last == 0 && sw.JSON(0, "metadata", map[string]any{"run_id": rn.ID, "thread_id": rn.ConversationID, "attempt": 1}) != nil {
		return
	}
	req := runs.FollowRequest{User: rn.UserID, ConversationID: rn.ConversationID, RunID: rn.ID, Sub: sub, Replay: true,
		Heartbeat: h.cfg.Heartbeat, Idle: heartbeat(sw)}
	if !h.follow(r.Context(), req, tr, last, func(ev sseEvent, id int64) error { return sw.JSON(id, ev.name, ev.data) }) {
		h.streamLost(r, sw, rn.ID)
	}
}

// cancelRun is POST /threads/{id}/runs/{run_id}/cancel: the run stops
// (status interrupted) and the thread is idle again; with ?wait=1 the
// answer comes once it has stopped.
func (h *handler) cancelRun(w http.ResponseWriter, r *http.Request) {
	rn, err := h.threadRun(r)
	if errors.Is(err, runs.ErrNotFound) {
		if q, qerr := h.queuedRun(r); qerr == nil {
			// A pending run is taken out of the queue: it never runs.
			if err := h.runs.CancelQueued(r.Context(), q.UserID, q.ID); err != nil {
				h.fail(w, r, err)
				return
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !rn.Active() {
		h.fail(w, r, errorf(http.StatusConflict, "not_running", "run %s is not running or waiting", rn.ID))
		return
	}
	wait := r.URL.Query().Get("wait")
	var sub *runs.Subscription
	if wait == "1" || wait == "true" {
		sub = h.runs.Subscribe(rn.ID, false)
		defer sub.Close()
	}
	if _, err := h.runs.Cancel(r.Context(), rn.UserID, rn.ConversationID); err != nil {
		h.fail(w, r, err)
		return
	}
	if sub == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	req := runs.FollowRequest{User: rn.UserID, ConversationID: rn.ConversationID, RunID: rn.ID, Sub: sub, After: rn.LastSeq,
		Replay: true, Rejoin: true}
	_, _ = h.runs.Follow(r.Context(), req, func(*runs.Event) error { return nil })
	w.WriteHeader(http.StatusNoContent)
}
