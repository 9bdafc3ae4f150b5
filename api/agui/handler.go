package agui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/api/httperr"
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
}

// busyGrace is how long a message on a thread whose run is still ending
// (its client aborted it a moment ago) waits before it is refused.
const busyGrace = 2 * time.Second

// Handler serves POST /ag-ui.
type Handler struct {
	cfg Config
	log *slog.Logger
}

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg, log: log}
}

// ServeHTTP runs the input's message, or resumes the thread's
// interrupted run, and streams the run as AG-UI events.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	user := runs.UserFrom(ctx)
	in, err := decodeInput(r.Body)
	if err == nil && h.cfg.MaxMessageRunes > 0 && utf8.RuneCountInString(in.message) > h.cfg.MaxMessageRunes {
		err = httperr.Invalid("the message is longer than %d characters", h.cfg.MaxMessageRunes)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(in.Resume) > 0 {
		h.resume(w, r, user, in)
		return
	}
	svc := h.cfg.Runs
	conv, err := svc.OpenConversation(ctx, user, in.ThreadID, in.message)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	req := runs.StartRequest{UserID: user, ConversationID: conv.ID, RequestID: w.Header().Get("X-Request-Id"),
		Input: nodes.Input{Message: in.message}}
	rn, sub, err := svc.Start(ctx, req)
	if errors.Is(err, store.ErrRunActive) && svc.AwaitIdle(ctx, conv.ID, busyGrace) {
		rn, sub, err = svc.Start(ctx, req)
	}
	if errors.Is(err, store.ErrRunActive) {
		err = fmt.Errorf("%w: the thread's run is going on or waits for an interrupt's answer; resume it (resume: [{interruptId, status, payload}]) or wait", err)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer sub.Close()
	t := newTranslator(in, conv.ID, rn.ID(), nil)
	t.lookup = h.lookup(ctx, user)
	h.stream(w, r, t, runs.FollowRequest{User: user, ConversationID: conv.ID, RunID: rn.ID(), Sub: sub})
}

// resume answers the interrupts the input names and streams the run
// they resume. Every entry is checked before any is answered: a bad one
// changes nothing.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, user string, in input) {
	ctx := r.Context()
	svc := h.cfg.Runs
	st := svc.Store()
	type answer struct {
		hr       store.HumanRequest
		approval store.ApprovalAnswer
		elicit   store.ElicitationAnswer
	}
	var (
		answers []answer
		cancel  bool
	)
	for i, e := range in.Resume {
		hr, err := st.GetHumanRequest(ctx, store.KindApproval, user, e.InterruptID)
		if errors.Is(err, store.ErrNotFound) {
			hr, err = st.GetHumanRequest(ctx, store.KindElicitation, user, e.InterruptID)
		}
		if err == nil && hr.ConversationID != in.ThreadID {
			err = store.ErrNotFound
		}
		if err == nil && hr.Status != store.HumanPending {
			err = store.ErrAlreadyResolved
		}
		if err == nil && len(answers) > 0 && hr.RunID != answers[0].hr.RunID {
			err = httperr.Invalid("resume[%d] answers an interrupt of another run", i)
		}
		if err != nil {
			h.fail(w, r, fmt.Errorf("resume[%d], interrupt %s: %w", i, e.InterruptID, err))
			return
		}
		a := answer{hr: hr}
		switch {
		case e.Status == "cancelled":
			cancel = true
		case hr.Kind == store.KindApproval:
			p, err := decodeApproval(e.Payload)
			if err != nil {
				h.fail(w, r, err)
				return
			}
			a.approval = store.ApprovalAnswer{Decision: store.DecisionApprove}
			switch {
			case !*p.Approved:
				a.approval = store.ApprovalAnswer{Decision: store.DecisionReject, Reason: p.Reason}
			case p.EditedArgs != nil:
				a.approval = store.ApprovalAnswer{Decision: store.DecisionEdit, Args: p.EditedArgs}
			}
		default:
			if len(e.Payload) == 0 || e.Payload[0] != '{' {
				h.fail(w, r, httperr.Invalid("resume[%d]: a question's payload is the object it asks for", i))
				return
			}
			a.elicit = store.ElicitationAnswer{Action: store.ActionAccept, Content: e.Payload}
		}
		answers = append(answers, a)
	}
	first := answers[0].hr
	// Subscribed, and the run's last event read, before anything is
	// answered: the resumed run's events all come after it.
	sub := svc.Subscribe(first.RunID, false)
	defer sub.Close()
	run, err := st.GetRun(ctx, user, first.RunID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	t := newTranslator(in, first.ConversationID, first.RunID, nil)
	t.lookup = h.lookup(ctx, user)
	if cancel {
		_, err = svc.Cancel(ctx, user, first.ConversationID)
	}
	for _, a := range answers {
		if cancel || err != nil {
			break
		}
		if a.hr.Kind == store.KindApproval {
			t.announced[a.hr.Approval.ToolCallID] = true
			_, err = svc.AnswerApproval(ctx, user, a.hr.ID, a.approval)
		} else {
			err = svc.AnswerElicitation(ctx, user, a.hr.ID, a.elicit)
		}
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.stream(w, r, t, runs.FollowRequest{User: user, ConversationID: first.ConversationID, RunID: first.RunID, Sub: sub,
		After: run.LastSeq, Replay: true})
}

// lookup reads the user's human requests from the record.
func (h *Handler) lookup(ctx context.Context, user string) func(store.HumanKind, string) (store.HumanRequest, bool) {
	st := h.cfg.Runs.Store()
	return func(kind store.HumanKind, id string) (store.HumanRequest, bool) {
		hr, err := st.GetHumanRequest(context.WithoutCancel(ctx), kind, user, id)
		return hr, err == nil
	}
}

// stream writes RUN_STARTED and then the run's events, translated, to
// its terminal event. A client that goes away cancels the run.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, t *translator, req runs.FollowRequest) {
	ctx := r.Context()
	// AG-UI's framing: data lines of one event's JSON, no names, no ids.
	sw := sse.Start(w, h.cfg.WriteTimeout)
	t.emit = func(v any) error { return sw.JSON(0, "", v) }
	if err := t.emit(runStarted{Type: "RUN_STARTED", ThreadID: t.in.ThreadID, RunID: t.in.RunID, ParentRunID: t.in.ParentRunID}); err != nil {
		h.gone(ctx, req)
		return
	}
	req.Heartbeat, req.Idle, req.Rejoin = h.cfg.Heartbeat, sw.Ping, true
	finished := false
	_, err := h.cfg.Runs.Follow(ctx, req, func(e *runs.Event) error {
		done, err := t.event(e)
		finished = finished || done
		return err
	})
	switch {
	case finished:
	case ctx.Err() != nil || sw.Failed():
		h.gone(ctx, req)
	default:
		h.log.LogAttrs(ctx, slog.LevelWarn, "an AG-UI stream ended before its run", slog.String("run_id", req.RunID), slog.Any("error", err))
		_ = t.emit(runError{Type: "RUN_ERROR", Message: "the stream of the run broke off; the run goes on in Trellis", Code: "stream_lost"})
	}
}

// gone cancels the run of a client that went away: AG-UI stops a run
// by aborting its request.
func (h *Handler) gone(ctx context.Context, req runs.FollowRequest) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := h.cfg.Runs.CancelRun(ctx, req.ConversationID, req.RunID); err != nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "cancelling the run of a client that went away", slog.String("run_id", req.RunID), slog.Any("error", err))
	}
}

// fail answers a request Trellis cannot run with a JSON error and a
// 4xx status for the client's mistakes (the client shows the body).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := httperr.Of(err)
	if p == nil {
		h.log.LogAttrs(r.Context(), slog.LevelError, "AG-UI request failed", slog.Any("error", err))
		p = httperr.Internal("")
	}
	httperr.Write(w, p)
}
