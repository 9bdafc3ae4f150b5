package aisdk

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/internal/sse"
	"github.com/trellis-ai/trellis/runs"
)

// Handler serves POST /api/ai-sdk/chat (Chat) and GET
// /api/ai-sdk/chat/{id}/stream (Resume).
type Handler struct {
	cfg Config
	log *slog.Logger
}

// New returns the handler.
func New(cfg Config) *Handler {
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
		last, err := svc.LatestRun(ctx, user, t.chat)
		if errors.Is(err, runs.ErrNotFound) {
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
	// useChat stops a run by aborting its request and may send the next
	// message at once; a run waiting for an approval the user chose not
	// to answer is dropped for the new message.
	rn, sub, err := svc.Start(ctx, runs.StartRequest{UserID: user, ConversationID: conv.ID, RequestID: w.Header().Get("X-Request-Id"),
		Input: runs.Input{Message: t.message}, Edits: edits, WaitIdle: true, DropWaiting: true})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer sub.Close()
	tr := newTranslator(rn.ID(), t.approvals, nil)
	h.stream(w, r, tr, runs.FollowRequest{User: user, ConversationID: conv.ID, RunID: rn.ID(), Sub: sub,
		OnDisconnect: runs.DisconnectAwaitResume})
}

// answer records the approval answers of the chat's last assistant
// message (approvals, and calls that may have run, shown as approvals)
// and streams the rest of that message. Every answer is checked
// before any is recorded.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, user string, t turn) {
	ids := make([]string, len(t.answers))
	for i, a := range t.answers {
		ids[i] = a.approvalID
	}
	a, err := h.cfg.Runs.Answer(r.Context(), runs.AnswerRequest{User: user, ConversationID: t.chat, IDs: ids,
		Decide: func(i int, hr runs.HumanRequest) (runs.Answer, error) {
			if hr.Kind == runs.KindUncertainCall { // shown as an approval: approved runs it again, denied skips it
				if t.answers[i].approved {
					return runs.Answer{Call: runs.CallAnswer{Decision: runs.CallRetry}}, nil
				}
				return runs.Answer{Call: runs.CallAnswer{Decision: runs.CallSkip}}, nil
			}
			if hr.Kind != runs.KindApproval {
				return runs.Answer{}, runs.ErrNotFound // useChat answers approvals only
			}
			if !t.answers[i].approved {
				return runs.Answer{Approval: runs.ApprovalAnswer{Decision: runs.DecisionReject, Reason: t.answers[i].reason}}, nil
			}
			return runs.Answer{Approval: runs.ApprovalAnswer{Decision: runs.DecisionApprove}}, nil
		}})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer a.Follow.Sub.Close()
	tr := newTranslator(a.Follow.RunID, t.approvals, nil)
	for _, x := range t.answers {
		tr.announced[x.toolCallID] = true
		tr.byApproval[x.approvalID] = x.toolCallID
	}
	a.Follow.OnDisconnect = runs.DisconnectAwaitResume
	h.stream(w, r, tr, a.Follow)
}

// Resume is GET /api/ai-sdk/chat/{id}/stream: the chat's running run
// replayed from its start (useChat's default transport expects the
// whole assistant message, also across the approvals the run stopped
// for), then live; 204 when nothing streams, unknown chats included
// (useChat asks on every page load). A run parked on a call that may
// have run is replayed to its end, the call's approval request: the
// stream that would have shown it broke with the process that ran the
// call, and the page asks on its next load.
func (h *Handler) Resume(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	user := runs.UserFrom(ctx)
	svc := h.cfg.Runs
	last, err := svc.LatestRun(ctx, user, r.PathValue("id"))
	uncertain := err == nil && !last.Superseded && last.Status == runs.RunInterrupted && last.InterruptReason == runs.KindUncertainCall
	if errors.Is(err, runs.ErrNotFound) || err == nil && last.Status != runs.RunRunning && !uncertain {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	sub := svc.Subscribe(last.ID, false)
	defer sub.Close()
	through, err := svc.LastInterrupt(ctx, user, last.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	req := runs.FollowRequest{User: user, ConversationID: last.ConversationID, RunID: last.ID, Sub: sub, Replay: true,
		Resumes: true, OnDisconnect: runs.DisconnectAwaitResume}
	if uncertain {
		// Its last run.interrupted ends the replay; a client that leaves
		// before it leaves the call waiting for the person.
		through--
		req.OnDisconnect = runs.DisconnectKeep
	}
	tr := newTranslator(last.ID, true, nil)
	tr.through, req.Through = through, through
	h.stream(w, r, tr, req)
}

// stream writes the assistant message's chunks to the run's end, then
// [DONE]. The run of a client that goes away meets req.OnDisconnect:
// for a run under way, it waits for a resume (stop() aborts the
// request; so does a page reload, which resumes).
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, tr *translator, req runs.FollowRequest) {
	ctx := r.Context()
	// The UI message stream: data lines of one chunk's JSON, ended by
	// [DONE], under its protocol header.
	w.Header().Set("X-Vercel-Ai-Ui-Message-Stream", "v1")
	sw := sse.Start(w, h.cfg.WriteTimeout)
	emit := func(c chunk) error { return sw.JSON(0, "", c) }
	end := func() error { return sw.Event(0, "", []byte("[DONE]")) }
	tr.emit = emit
	req.Begin = tr.begin
	req.Heartbeat, req.Idle, req.Rejoin = h.cfg.Heartbeat, sw.Ping, true
	req.Gone, req.ResumeGrace = sw.Failed, h.cfg.ResumeGrace
	finished := false
	_, err := h.cfg.Runs.Follow(ctx, req, func(e *runs.Event) error {
		done, err := tr.event(e)
		finished = finished || done
		return err
	})
	switch {
	case finished:
		_ = end()
	case ctx.Err() != nil || sw.Failed():
	default:
		h.log.LogAttrs(ctx, slog.LevelWarn, "an AI SDK stream ended before its run", slog.String("run_id", req.RunID), slog.Any("error", err))
		_ = emit(chunk{Type: "error", ErrorText: "the stream of the run broke off; the run goes on in Trellis"})
		_ = end()
	}
}

// fail answers a request Trellis cannot take with a JSON error, 4xx for
// the client's mistakes; useChat shows the body as the chat's error.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	httperr.Reply(w, r, h.log, "AI SDK request failed", err)
}
