package aisdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/sse"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// Config configures a Handler. Runs is required; every other zero
// field works, as stated.
type Config struct {
	Runs *runs.Service
	// Logger receives what goes wrong on the server's side; nil
	// discards.
	Logger *slog.Logger
	// Heartbeat is the interval of ": ping" comments on an idle stream;
	// 0 means 15 s.
	Heartbeat time.Duration
	// WriteTimeout bounds each write to a stream; 0 means 30 s.
	WriteTimeout time.Duration
	// MaxMessageRunes caps the user's message (400 beyond it); 0: no cap.
	MaxMessageRunes int
	// ResumeGrace is how long the run of a client that went away waits
	// for a client to resume its stream before it is cancelled; 0
	// means DefaultResumeGrace.
	ResumeGrace time.Duration
}

// DefaultResumeGrace is Config.ResumeGrace's default: time for a page
// to reload and resume.
const DefaultResumeGrace = 5 * time.Second

// busyGrace is how long a message on a chat whose run is still ending
// waits before it is refused.
const busyGrace = 2 * time.Second

// Handler serves POST /api/ai-sdk/chat (Chat) and GET
// /api/ai-sdk/chat/{id}/stream (Resume).
type Handler struct {
	cfg     Config
	log     *slog.Logger
	orphans orphans
}

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.ResumeGrace <= 0 {
		cfg.ResumeGrace = DefaultResumeGrace
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg, log: log}
}

// Chat runs the chat's new message, or answers its approvals and goes
// on with the run, and streams the run's assistant message.
func (h *Handler) Chat(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	user := runs.UserFrom(ctx)
	t, err := decodeRequest(r.Body)
	if err == nil && h.cfg.MaxMessageRunes > 0 && utf8.RuneCountInString(t.message) > h.cfg.MaxMessageRunes {
		err = httperr.Invalid("the message is longer than %d characters", h.cfg.MaxMessageRunes)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(t.answers) > 0 {
		h.answer(w, r, user, t)
		return
	}
	svc := h.cfg.Runs
	var edits string
	if t.regenerate {
		// Looked up first: a chat Trellis does not know is not made for it.
		last, err := svc.Store().LatestRun(ctx, user, t.chat)
		if errors.Is(err, store.ErrNotFound) {
			err = httperr.Invalid("the chat has no answer to regenerate")
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		edits = last.ID
	}
	conv, err := svc.OpenConversation(ctx, user, t.chat, t.message)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.orphans.claim(conv.ID, false) // a run whose client left: the user moved on
	req := runs.StartRequest{UserID: user, ConversationID: conv.ID, RequestID: w.Header().Get("X-Request-Id"),
		Input: nodes.Input{Message: t.message}, Edits: edits}
	rn, sub, err := svc.Start(ctx, req)
	if errors.Is(err, store.ErrRunActive) {
		// A run waiting for an approval the user chose not to answer is
		// dropped for the new message; a run still ending is waited for.
		if last, lerr := svc.Store().LatestRun(ctx, user, conv.ID); lerr == nil && last.Status == store.RunInterrupted {
			if _, cerr := svc.Cancel(ctx, user, conv.ID); cerr != nil && !errors.Is(cerr, runs.ErrNothingToRun) {
				h.fail(w, r, cerr)
				return
			}
		}
		if h.settle(ctx, conv.ID) {
			rn, sub, err = svc.Start(ctx, req)
		}
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer sub.Close()
	tr := newTranslator(rn.ID(), t.approvals, nil)
	h.stream(w, r, tr, runs.FollowRequest{User: user, ConversationID: conv.ID, RunID: rn.ID(), Sub: sub})
}

// settle waits, busyGrace at most, for the conversation's live run to
// end, cancelling it at once if its client went away: that client's
// handler may notice it is gone only after the new message came.
func (h *Handler) settle(ctx context.Context, conv string) bool {
	deadline := time.Now().Add(busyGrace)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		h.orphans.claim(conv, false)
		if h.cfg.Runs.AwaitIdle(ctx, conv, 50*time.Millisecond) {
			return true
		}
	}
	return false
}

// answer records the approval answers of the chat's last assistant
// message and streams the rest of that message. Every answer is checked
// before any is recorded.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, user string, t turn) {
	ctx := r.Context()
	svc := h.cfg.Runs
	st := svc.Store()
	var first store.HumanRequest
	for i, a := range t.answers {
		hr, err := st.GetHumanRequest(ctx, store.KindApproval, user, a.approvalID)
		if err == nil && hr.ConversationID != t.chat {
			err = store.ErrNotFound
		}
		if err == nil && hr.Status != store.HumanPending {
			err = store.ErrAlreadyResolved
		}
		if err == nil && i > 0 && hr.RunID != first.RunID {
			err = httperr.Invalid("the approvals answered belong to different runs")
		}
		if err != nil {
			h.fail(w, r, fmt.Errorf("approval %s: %w", a.approvalID, err))
			return
		}
		if i == 0 {
			first = hr
		}
	}
	// Subscribed, and the run's last event read, before anything is
	// answered: the run's next events all come after it.
	sub := svc.Subscribe(first.RunID, false)
	defer sub.Close()
	run, err := st.GetRun(ctx, user, first.RunID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	tr := newTranslator(first.RunID, t.approvals, nil)
	for _, a := range t.answers {
		tr.announced[a.toolCallID] = true
		tr.byApproval[a.approvalID] = a.toolCallID
		ans := store.ApprovalAnswer{Decision: store.DecisionApprove}
		if !a.approved {
			ans = store.ApprovalAnswer{Decision: store.DecisionReject, Reason: a.reason}
		}
		if _, err := svc.AnswerApproval(ctx, user, a.approvalID, ans); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	h.stream(w, r, tr, runs.FollowRequest{User: user, ConversationID: first.ConversationID, RunID: first.RunID, Sub: sub,
		After: run.LastSeq, Replay: true})
}

// Resume is GET /api/ai-sdk/chat/{id}/stream: the chat's running run
// replayed from its start (useChat's default transport expects the
// whole assistant message, also across the approvals the run stopped
// for), then live; 204 when nothing streams, unknown chats included
// (useChat asks on every page load).
func (h *Handler) Resume(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	user := runs.UserFrom(ctx)
	svc := h.cfg.Runs
	last, err := svc.Store().LatestRun(ctx, user, r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) || err == nil && last.Status != store.RunRunning {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.orphans.claim(last.ConversationID, true)
	sub := svc.Subscribe(last.ID, false)
	defer sub.Close()
	through, err := h.lastInterrupt(ctx, user, last.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	tr := newTranslator(last.ID, true, nil)
	tr.through = through
	h.stream(w, r, tr, runs.FollowRequest{User: user, ConversationID: last.ConversationID, RunID: last.ID, Sub: sub, Replay: true})
}

// lastInterrupt returns the seq of the run's last stored
// run.interrupted (0 when it has none): a replay goes on through it.
func (h *Handler) lastInterrupt(ctx context.Context, user, runID string) (int64, error) {
	const page = 256
	var after, last int64
	for {
		evs, err := h.cfg.Runs.Store().EventsAfter(ctx, user, runID, after, page)
		if err != nil {
			return 0, err
		}
		for _, e := range evs {
			if e.Type == events.TypeRunInterrupted {
				last = e.Seq
			}
		}
		if len(evs) < page {
			return last, nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// stream writes the assistant message's chunks to the run's end, then
// [DONE]. A client that goes away leaves its run orphaned (see left).
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, tr *translator, req runs.FollowRequest) {
	ctx := r.Context()
	// The UI message stream: data lines of one chunk's JSON, ended by
	// [DONE], under its protocol header.
	w.Header().Set("X-Vercel-Ai-Ui-Message-Stream", "v1")
	sw := sse.Start(w, h.cfg.WriteTimeout)
	emit := func(c chunk) error { return sw.JSON(0, "", c) }
	end := func() error { return sw.Event(0, "", []byte("[DONE]")) }
	tr.emit = emit
	if err := tr.begin(); err != nil {
		h.left(ctx, req)
		return
	}
	req.Heartbeat, req.Idle, req.Rejoin = h.cfg.Heartbeat, sw.Ping, true
	var (
		finished bool
		err      error
	)
	for {
		var ended bool
		ended, err = h.cfg.Runs.Follow(ctx, req, func(e *runs.Event) error {
			req.After = e.Seq
			done, err := tr.event(e)
			finished = finished || done
			return err
		})
		// A replay goes on past the segments that ended before it began.
		if !ended || finished {
			break
		}
	}
	switch {
	case finished:
		_ = end()
	case ctx.Err() != nil || sw.Failed():
		h.left(ctx, req)
	default:
		h.log.LogAttrs(ctx, slog.LevelWarn, "an AI SDK stream ended before its run", slog.String("run_id", req.RunID), slog.Any("error", err))
		_ = emit(chunk{Type: "error", ErrorText: "the stream of the run broke off; the run goes on in Trellis"})
		_ = end()
	}
}

// left waits, for ResumeGrace, for a client to resume the stream of a
// client that went away, and cancels the run if none does (stop()
// aborts the request; so does a page reload, which resumes). A new
// message on the chat cancels it at once; a run that ends meanwhile is
// left as it ended.
func (h *Handler) left(ctx context.Context, req runs.FollowRequest) {
	wait, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	x := h.orphans.add(req.ConversationID, req.RunID, stop)
	ended := h.cfg.Runs.AwaitIdle(wait, req.ConversationID, h.cfg.ResumeGrace)
	if resumed := h.orphans.done(req.ConversationID, x); ended || resumed {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := h.cfg.Runs.CancelRun(cctx, req.ConversationID, req.RunID); err != nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "cancelling the run of a client that went away", slog.String("run_id", req.RunID), slog.Any("error", err))
	}
}

// fail answers a request Trellis cannot take with a JSON error, 4xx for
// the client's mistakes; useChat shows the body as the chat's error.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := httperr.Of(err)
	if p == nil {
		h.log.LogAttrs(r.Context(), slog.LevelError, "AI SDK request failed", slog.Any("error", err))
		p = httperr.Internal("")
	}
	httperr.Write(w, p)
}
