package openai

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/internal/sse"
	"github.com/trellis-ai/trellis/runs"
)

// responses serves POST /v1/responses: a run of the agent, answered as
// one response object or streamed as the Responses API's semantic
// events.
func (h *handler) responses(w http.ResponseWriter, r *http.Request) {
	t, ok := decode(h, w, r, parseResponsesRequest, func(t responsesTurn) string { return t.model })
	if !ok {
		return
	}
	ctx := r.Context()
	user := runs.UserFrom(ctx)
	req := runs.StartRequest{UserID: user, RequestID: w.Header().Get("X-Request-Id"), Input: t.input, AwaitsEnd: !t.stream}
	if t.previous != "" {
		if err := h.continueFrom(ctx, user, &t, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	rn, sub, err := h.cfg.Runs.Start(ctx, req)
	if errors.Is(err, runs.ErrRunActive) {
		// Not a 409: the client would retry it.
		writeError(w, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: ptr("previous_response_id"), Code: ptr("conversation_busy"),
			Message: "the conversation of previous_response_id has a run going, or waiting for an answer in Trellis; wait for it, answer it or cancel it first"})
		return
	}
	if err != nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "openai: starting a response's run failed", slog.Any("error", err))
		writeError(w, err)
		return
	}
	defer sub.Close()
	if !t.store {
		defer h.forget(ctx, user, rn.ConversationID())
	}
	w.Header().Set("X-Trellis-Conversation-Id", rn.ConversationID())
	b := newResponse(rn.ID(), &t)
	if t.stream {
		b.sw = sse.Start(w, h.cfg.WriteTimeout)
	}
	gone := func() bool { return b.sw != nil && b.sw.Failed() }
	done, err := h.cfg.Runs.Follow(ctx, runs.FollowRequest{User: user, ConversationID: rn.ConversationID(), RunID: rn.ID(), Sub: sub,
		Rejoin: !t.stream, Gone: gone, OnDisconnect: runs.DisconnectCancel, Begin: b.begin},
		func(e *runs.Event) error {
			p, err := e.Typed()
			if err != nil {
				return err
			}
			return b.take(p)
		})
	if ctx.Err() != nil || gone() {
		return
	}
	if done && b.failure == nil {
		if b.sw == nil {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(h.cfg.WriteTimeout))
			jsonbody.Write(w, http.StatusOK, b.object())
		}
		return
	}
	if err != nil {
		h.log.LogAttrs(ctx, slog.LevelError, "openai: following a response's run failed", slog.String("run_id", rn.ID()), slog.Any("error", err))
	}
	b.fail(w, err)
}

// continueFrom points req at the conversation of the previous response,
// which must be its latest: the request's messages start a new turn
// there, or its function_call_output items go on with the previous
// turn, which ended with the calls they answer (see continued).
func (h *handler) continueFrom(ctx context.Context, user string, t *responsesTurn, req *runs.StartRequest) error {
	notFound := &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: ptr("previous_response_id"),
		Code: ptr("previous_response_not_found"), Message: fmt.Sprintf("previous response %s%s not found", responsePrefix, t.previous)}
	prev, err := h.cfg.Runs.RunRecord(ctx, user, t.previous)
	if errors.Is(err, runs.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	latest, err := h.cfg.Runs.LatestRun(ctx, user, prev.ConversationID)
	if errors.Is(err, runs.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	if latest.ID != prev.ID {
		return invalid("previous_response_id", fmt.Sprintf("previous_response_id must name the latest response of its conversation, %s%s: "+
			"Trellis continues a conversation from its end", responsePrefix, latest.ID))
	}
	req.ConversationID, req.WaitIdle = prev.ConversationID, true
	if len(t.outputs) == 0 {
		return nil
	}
	in, err := h.continued(ctx, prev, t)
	if err != nil {
		return err
	}
	req.Input, req.Edits = in, prev.ID
	return nil
}

// continued is the input that goes on with the turn of the previous
// response prev, which ended with calls of client tools, now that t
// brings their outputs: the turn is run again from its start (an edit,
// so the conversation keeps one version of it) with the same message,
// what the turn did so far and the outputs after it.
func (h *handler) continued(ctx context.Context, prev runs.RunRecord, t *responsesTurn) (runs.Input, error) {
	snap, err := h.cfg.Runs.State(ctx, prev.ConversationID)
	if err != nil {
		return runs.Input{}, err
	}
	msgs := snap.State.Messages
	u := len(msgs) - 1
	for u >= 0 && msgs[u].Role != runs.RoleUser {
		u--
	}
	var calls []runs.ToolCall
	if last := len(msgs) - 1; u >= 0 && last > u && msgs[last].Role == runs.RoleAssistant && prev.Status == runs.RunCompleted {
		calls = msgs[last].ToolCalls
	}
	if len(calls) == 0 {
		return runs.Input{}, invalid("input", "the previous response called no function: function_call_output items have nothing to answer")
	}
	names := make(map[string]string, len(calls))
	for _, c := range calls {
		names[c.ID] = c.Tool
	}
	in := t.input
	in.Message = msgs[u].Content
	in.Model = t.model
	in.Continued = append([]runs.Message(nil), msgs[u+1:]...)
	answered := make(map[string]bool, len(t.outputs))
	for i, o := range t.outputs {
		name, ok := names[o.ToolCallID]
		if !ok || answered[o.ToolCallID] {
			return runs.Input{}, invalid(fmt.Sprintf("input[%d].call_id", i), fmt.Sprintf("%q is not a call of the previous response still to answer", o.ToolCallID))
		}
		answered[o.ToolCallID] = true
		o.Name = name
		in.Continued = append(in.Continued, o)
	}
	for _, c := range calls {
		if !answered[c.ID] {
			return runs.Input{}, invalid("input", fmt.Sprintf("no function_call_output for the call %s (%s) of the previous response", c.ID, c.Tool))
		}
	}
	return in, nil
}

// forget deletes the conversation of a response made with store: false,
// once it has ended or its client went away: nothing of it stays, and
// its id is not found afterwards.
func (h *handler) forget(ctx context.Context, user, conversationID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := h.cfg.Runs.DeleteConversation(ctx, user, conversationID); err != nil {
		h.log.LogAttrs(ctx, slog.LevelError, "openai: deleting the conversation of a response made with store: false failed",
			slog.String("conversation_id", conversationID), slog.Any("error", err))
	}
}

// getResponse serves GET /v1/responses/{id}: the response as its run's
// stored events tell it. A response whose run is still going is
// in_progress, its output not yet shown.
func (h *handler) getResponse(w http.ResponseWriter, r *http.Request) {
	rec, t, err := h.responseRun(r)
	if err != nil {
		writeError(w, err)
		return
	}
	b := newResponse(rec.ID, t)
	b.created = rec.CreatedAt.Unix()
	if rec.Status != runs.RunRunning {
		if err := h.replay(r.Context(), rec, b, nil, rec.LastSeq-1); err != nil {
			writeError(w, err)
			return
		}
	}
	jsonbody.Write(w, http.StatusOK, b.object())
}

// cancelResponse serves POST /v1/responses/{id}/cancel: the response's
// run, going or waiting for an approval, is cancelled, and the response
// is answered once it has ended (status cancelled).
func (h *handler) cancelResponse(w http.ResponseWriter, r *http.Request) {
	rec, t, err := h.responseRun(r)
	if err != nil {
		writeError(w, err)
		return
	}
	ctx := r.Context()
	if rec.Status != runs.RunRunning && rec.Status != runs.RunInterrupted {
		writeError(w, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: ptr("response_not_cancellable"),
			Message: fmt.Sprintf("the response is %s: only a response in progress, or waiting for an approval, can be cancelled", rec.Status)})
		return
	}
	// Subscribed first: the cancelled run's last events are not missed.
	sub := h.cfg.Runs.Subscribe(rec.ID, false)
	defer sub.Close()
	if _, err := h.cfg.Runs.Cancel(ctx, runs.UserFrom(ctx), rec.ConversationID); err != nil && !errors.Is(err, runs.ErrNothingToRun) {
		writeError(w, err)
		return
	}
	b := newResponse(rec.ID, t)
	b.created = rec.CreatedAt.Unix()
	if err := h.replay(ctx, rec, b, sub, rec.LastSeq); err != nil {
		writeError(w, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, b.object())
}

// responseRun reads the user's run the path's response id names.
func (h *handler) responseRun(r *http.Request) (runs.RunRecord, *responsesTurn, error) {
	id := r.PathValue("id")
	notFound := &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: ptr("response_not_found"),
		Message: fmt.Sprintf("response %s not found", id)}
	runID, ok := strings.CutPrefix(id, responsePrefix)
	if !ok || runID == "" {
		return runs.RunRecord{}, nil, notFound
	}
	rec, err := h.cfg.Runs.RunRecord(r.Context(), runs.UserFrom(r.Context()), runID)
	if errors.Is(err, runs.ErrNotFound) {
		return runs.RunRecord{}, nil, notFound
	}
	if err != nil {
		return runs.RunRecord{}, nil, err
	}
	// What the request said beside its input (model, tools,
	// instructions) is not kept: the object shows none of it.
	return rec, &responsesTurn{store: true}, nil
}

// replay builds b from the stored events of the run rec, and from sub's
// live ones when it is still going, up to its first end after the event
// through (a run parked for an approval and resumed ends twice; the
// cancel of a parked one ends it once more).
func (h *handler) replay(ctx context.Context, rec runs.RunRecord, b *response, sub *runs.Subscription, through int64) error {
	if sub == nil {
		sub = h.cfg.Runs.Subscribe(rec.ID, false)
		defer sub.Close()
	}
	_, err := h.cfg.Runs.Follow(ctx, runs.FollowRequest{User: runs.UserFrom(ctx), ConversationID: rec.ConversationID, RunID: rec.ID, Sub: sub,
		Replay: true, Rejoin: true, Through: through, OnDisconnect: runs.DisconnectKeep},
		func(e *runs.Event) error {
			p, err := e.Typed()
			if err != nil {
				return err
			}
			return b.take(p)
		})
	return err
}
