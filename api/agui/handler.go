package agui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/internal/sse"
	"github.com/trellis-ai/trellis/runs"
)

// Config configures a Handler. Runs is required; every other zero
// field works, as stated.
type Config struct {
	Runs *runs.Service
	// Logger receives what goes wrong on the server's side; nil
	// discards.
	Logger *slog.Logger
	// Heartbeat is the interval of ": ping" comments on an idle stream,
	// and WriteTimeout bounds each write to a stream: the server's, which
	// it passes in.
	Heartbeat    time.Duration
	WriteTimeout time.Duration
}

// Handler serves POST /ag-ui.
type Handler struct{ cfg Config }

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg}
}

// ServeHTTP runs the input's message, or resumes the thread's
// interrupted run, and streams the run as AG-UI events.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in, err := decodeInput(r.Body)
	switch {
	case err != nil:
		h.fail(w, r, err)
	case len(in.Resume) > 0:
		h.resume(w, r, runs.UserFrom(r.Context()), in)
	default:
		h.run(w, r, runs.UserFrom(r.Context()), in)
	}
}

// run runs the input's message on its thread.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, user string, in input) {
	ctx := r.Context()
	svc := h.cfg.Runs
	clientContext := in.contextObject()
	if err := runs.CheckContext(clientContext); err != nil {
		h.fail(w, r, err)
		return
	}
	conv, err := svc.OpenConversation(ctx, user, in.ThreadID, in.message)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// AG-UI stops a run by aborting its request, and may send the next
	// message at once.
	rn, sub, err := svc.Start(ctx, runs.StartRequest{UserID: user, ConversationID: conv.ID, RequestID: w.Header().Get("X-Request-Id"),
		Input: runs.Input{Message: in.message, Context: clientContext}, WaitIdle: true})
	if errors.Is(err, runs.ErrRunActive) {
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
	ids := make([]string, len(in.Resume))
	for i, e := range in.Resume {
		ids[i] = e.InterruptID
	}
	a, err := h.cfg.Runs.Answer(ctx, runs.AnswerRequest{User: user, ConversationID: in.ThreadID, IDs: ids,
		Decide: func(i int, hr runs.HumanRequest) (runs.Answer, error) { return answerOf(i, in.Resume[i], hr) }})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer a.Follow.Sub.Close()
	t := newTranslator(in, a.Follow.ConversationID, a.Follow.RunID, nil)
	t.lookup = h.lookup(ctx, user)
	for i, hr := range a.Requests {
		if hr.Kind == runs.KindApproval && in.Resume[i].Status != "cancelled" {
			t.announced[hr.Approval.ToolCallID] = true
		}
	}
	h.stream(w, r, t, a.Follow)
}

// lookup reads the user's human requests from the record.
func (h *Handler) lookup(ctx context.Context, user string) func(runs.HumanKind, string) (runs.HumanRequest, bool) {
	return func(kind runs.HumanKind, id string) (runs.HumanRequest, bool) {
		hr, err := h.cfg.Runs.HumanRequest(context.WithoutCancel(ctx), kind, user, id)
		return hr, err == nil
	}
}

// stream writes RUN_STARTED and then the run's events, translated, to
// its terminal event. A client that goes away cancels the run: AG-UI
// stops a run by aborting its request.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, t *translator, req runs.FollowRequest) {
	ctx := r.Context()
	// AG-UI's framing: data lines of one event's JSON, no names, no ids.
	sw := sse.Start(w, h.cfg.WriteTimeout)
	t.emit = func(v any) error { return sw.JSON(0, "", v) }
	req.Begin = func() error {
		return t.emit(runStarted{Type: "RUN_STARTED", ThreadID: t.in.ThreadID, RunID: t.in.RunID, ParentRunID: t.in.ParentRunID})
	}
	req.Heartbeat, req.Idle, req.Rejoin = h.cfg.Heartbeat, sw.Ping, true
	req.Gone, req.OnDisconnect = sw.Failed, runs.DisconnectCancel
	finished := false
	_, err := h.cfg.Runs.Follow(ctx, req, func(e *runs.Event) error {
		done, err := t.event(e)
		finished = finished || done
		return err
	})
	if finished || ctx.Err() != nil || sw.Failed() {
		return
	}
	h.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "an AG-UI stream ended before its run", slog.String("run_id", req.RunID), slog.Any("error", err))
	_ = t.fail("the stream of the run broke off; the run goes on in Trellis", "stream_lost")
}

// fail answers a request Trellis cannot run with a JSON error and a
// 4xx status for the client's mistakes (the client shows the body).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	httperr.Reply(w, r, h.cfg.Logger, "AG-UI request failed", err)
}
