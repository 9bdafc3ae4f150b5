package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/sse"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// chatRequest is the body of POST /chat and /chat/sync.
type chatRequest struct {
	Message        string          `json:"message"`
	ConversationID string          `json:"conversation_id"`
	Model          string          `json:"model"`
	DocumentIDs    []string        `json:"document_ids"`
	Context        json.RawMessage `json:"context"`
	// Memory false keeps this request out of the agent's memory: nothing
	// remembered is loaded, nothing is learnt. Absent is true.
	Memory *bool `json:"memory"`
	// Budget tightens the server's run budget for this request:
	// {"max_tokens", "max_tool_calls", "max_seconds"}, each 0 or absent for the
	// server's (README, API additions).
	Budget *events.Budget `json:"budget"`
	// MultitaskStrategy is what becomes of the message when the
	// conversation's run is going or waits for a person: reject (absent),
	// interrupt, rollback or enqueue (docs/api.md, runs.Multitask).
	MultitaskStrategy runs.Multitask `json:"multitask_strategy"`
}

// editRequest is the body of POST /conversations/{id}/runs/{run_id}/edit.
type editRequest struct {
	Message string `json:"message"`
}

// message validates a chat message: not empty, and, as the run
// service checks it for every surface, not too long.
func (s *Server) message(msg string) (string, error) {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return "", errorf(http.StatusBadRequest, "empty_message", `"message" is required and must not be empty`)
	}
	return msg, s.runs.CheckMessage(msg)
}

// chatStart decodes and validates a chat request.
func (s *Server) chatStart(r *http.Request, interactive bool) (runs.StartRequest, error) {
	var body chatRequest
	if err := jsonbody.Decode(r, &body); err != nil {
		return runs.StartRequest{}, err
	}
	msg, err := s.message(body.Message)
	if err != nil {
		return runs.StartRequest{}, err
	}
	if body.Model != "" {
		if _, err := s.runs.Models().Resolve(body.Model); err != nil {
			return runs.StartRequest{}, err
		}
	}
	if c := bytes.TrimSpace(body.Context); len(c) > 0 && !bytes.Equal(c, []byte("null")) && c[0] != '{' {
		return runs.StartRequest{}, errorf(http.StatusBadRequest, "invalid_field", `"context" must be a JSON object`)
	}
	for _, id := range body.DocumentIDs {
		if strings.TrimSpace(id) == "" {
			return runs.StartRequest{}, errorf(http.StatusBadRequest, "invalid_field", `"document_ids" must not hold empty ids`)
		}
	}
	conversationID := strings.TrimSpace(body.ConversationID)
	if err := s.docs.Check(r, conversationID, body.DocumentIDs); err != nil {
		return runs.StartRequest{}, err
	}
	if b := body.Budget; b != nil && (b.Tokens < 0 || b.ToolCalls < 0 || b.Seconds < 0) {
		return runs.StartRequest{}, errorf(http.StatusBadRequest, "invalid_field", `"budget" limits must not be negative`)
	}
	if !body.MultitaskStrategy.Valid() {
		return runs.StartRequest{}, errorf(http.StatusBadRequest, "invalid_field",
			`"multitask_strategy" must be reject, interrupt, rollback or enqueue`)
	}
	in := nodes.Input{Message: msg, Model: body.Model, DocumentIDs: body.DocumentIDs, NoMemory: body.Memory != nil && !*body.Memory}
	if b := body.Budget; b != nil && !b.Zero() {
		in.Budget = b
	}
	if c := bytes.TrimSpace(body.Context); len(c) > 0 && c[0] == '{' {
		var compact bytes.Buffer
		if err := json.Compact(&compact, c); err != nil {
			return runs.StartRequest{}, errorf(http.StatusBadRequest, "invalid_field", `"context" must be a JSON object`)
		}
		if err := runs.CheckContext(compact.Bytes()); err != nil {
			return runs.StartRequest{}, err
		}
		in.Context = compact.Bytes()
	}
	return runs.StartRequest{UserID: userOf(r), ConversationID: conversationID,
		RequestID: middleware.RequestIDFrom(r.Context()), Input: in, Interactive: interactive, Multitask: body.MultitaskStrategy}, nil
}

// queuedResponse is the 202 answer to a chat message queued behind the
// conversation's run (multitask_strategy enqueue).
type queuedResponse struct {
	Status string `json:"status"`
	runs.QueuedRun
}

// started answers a chat request whose Start failed: 202 with where the
// message waits when it was queued, the error otherwise.
func (s *Server) started(w http.ResponseWriter, r *http.Request, err error) {
	if q, ok := errors.AsType[*runs.QueuedError](err); ok {
		jsonbody.Write(w, http.StatusAccepted, queuedResponse{Status: "queued", QueuedRun: q.Queued})
		return
	}
	s.writeError(w, r, err)
}

// handleChat is POST /api/v1/chat: a run, streamed as SSE.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	req, err := s.chatStart(r, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rn, sub, err := s.runs.Start(r.Context(), req)
	if err != nil {
		s.started(w, r, err)
		return
	}
	s.serveRun(w, r, rn, sub)
}

// handleEdit is POST /api/v1/conversations/{id}/runs/{run_id}/edit: the
// run's message replaced, rerun from the state before it, streamed as SSE.
func (s *Server) handleEdit(w http.ResponseWriter, r *http.Request) {
	var body editRequest
	if err := jsonbody.Decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	msg, err := s.message(body.Message)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rn, sub, err := s.runs.Start(r.Context(), runs.StartRequest{UserID: userOf(r), ConversationID: r.PathValue("id"),
		RequestID: middleware.RequestIDFrom(r.Context()), Input: nodes.Input{Message: msg}, Edits: r.PathValue("run_id"), Interactive: true})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.serveRun(w, r, rn, sub)
}

// serveRun streams a run its request started; a client leaving cancels
// the run only with CancelOnDisconnect.
func (s *Server) serveRun(w http.ResponseWriter, r *http.Request, rn *runs.Run, sub *runs.Subscription) {
	defer sub.Close()
	s.serveSSE(w, r, runs.FollowRequest{User: userOf(r), ConversationID: rn.ConversationID(), RunID: rn.ID(), Sub: sub,
		OnDisconnect: runs.DisconnectDefault})
}

// syncResponse is POST /chat/sync's answer. Reason and Error are
// additions: why an interrupted run waits, and how a failed one failed.
type syncResponse struct {
	ConversationID string       `json:"conversation_id"`
	RunID          string       `json:"run_id"`
	RequestID      string       `json:"request_id"`
	Status         string       `json:"status"`
	Response       string       `json:"response"`
	Usage          events.Usage `json:"usage"`
	// Budget is response.done's: the run's use of its budget, when it
	// has one.
	Budget    *events.BudgetUsage `json:"budget,omitempty"`
	ToolCalls []syncToolCall      `json:"tool_calls"`
	Citations []events.Citation   `json:"citations"`
	Pending   *syncPending        `json:"pending,omitempty"`
	Reason    string              `json:"reason,omitempty"`
	Error     *events.ErrorInfo   `json:"error,omitempty"`
}

type syncToolCall struct {
	ToolCallID string          `json:"tool_call_id"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Status     string          `json:"status"`
	Result     string          `json:"result"`
}

// syncPending is what an interrupted run waits for; Clarification and
// UncertainCalls are additions, for runs that asked a question and runs
// that found a call that may have run.
type syncPending struct {
	Approvals      []store.HumanRequest `json:"approvals"`
	Elicitations   []store.HumanRequest `json:"elicitations"`
	UncertainCalls []store.HumanRequest `json:"uncertain_calls"`
	Clarification  *clarification       `json:"clarification,omitempty"`
}

// newSyncPending is a syncPending with its lists empty, not null.
func newSyncPending() *syncPending {
	return &syncPending{Approvals: []store.HumanRequest{}, Elicitations: []store.HumanRequest{}, UncertainCalls: []store.HumanRequest{}}
}

// waits reports whether a run interrupted for reason waits for human
// requests the pending lists name (a clarifying question is the run's
// own answer, a shutdown nobody's question).
func waits(reason string) bool {
	switch reason {
	case string(events.PendingApproval), string(events.PendingElicitation), string(events.PendingUncertainCall):
		return true
	}
	return false
}

type clarification struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	// ExpiresAt and OnExpiry are the question's deadline, when it has
	// one, as run.interrupted's pending item shows it.
	ExpiresAt *time.Time           `json:"expires_at,omitempty"`
	OnExpiry  events.ExpiryOutcome `json:"on_expiry,omitempty"`
}

// handleChatSync is POST /api/v1/chat/sync: a run, answered as one JSON
// object once it ends or is parked.
func (s *Server) handleChatSync(w http.ResponseWriter, r *http.Request) {
	req, err := s.chatStart(r, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req.AwaitsEnd = true // the events are folded into one answer at the end
	rn, sub, err := s.runs.Start(r.Context(), req)
	if err != nil {
		s.started(w, r, err)
		return
	}
	defer sub.Close()
	// The response comes when the run ends, later than the server's
	// WriteTimeout may allow.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	res := syncResponse{ConversationID: rn.ConversationID(), RunID: rn.ID(), RequestID: rn.RequestID(),
		ToolCalls: []syncToolCall{}, Citations: []events.Citation{}}
	user := userOf(r)
	done, err := s.runs.Follow(r.Context(), runs.FollowRequest{User: user, ConversationID: rn.ConversationID(), RunID: rn.ID(),
		Sub: sub, Rejoin: true, OnDisconnect: runs.DisconnectDefault}, func(e *runs.Event) error {
		// A live event comes typed; one caught up from the store after
		// a takeover or a cut is decoded once.
		p, _ := e.Typed()
		res.apply(e.Type, p)
		return nil
	})
	if !done && r.Context().Err() != nil {
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if res.Status == string(store.RunInterrupted) && waits(res.Reason) {
		// What the run waits for, whatever its reason names first: an
		// approval and a call that may have run can wait side by side,
		// as in run.interrupted's pending.
		res.Pending = newSyncPending()
		for _, l := range []struct {
			kind events.PendingKind
			into *[]store.HumanRequest
		}{{events.PendingApproval, &res.Pending.Approvals}, {events.PendingElicitation, &res.Pending.Elicitations},
			{events.PendingUncertainCall, &res.Pending.UncertainCalls}} {
			if *l.into, err = s.runs.Waiting(r.Context(), l.kind, user, rn.ConversationID(), rn.ID()); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
	}
	jsonbody.Write(w, http.StatusOK, res)
}

// apply folds one event, of type typ, into the response; p is its
// payload, nil or partly decoded only if the stored event could not be
// read back.
func (res *syncResponse) apply(typ string, p events.Payload) {
	switch d := p.(type) {
	case *events.ToolStart:
		res.ToolCalls = append(res.ToolCalls, syncToolCall{ToolCallID: d.ToolCallID, Tool: d.Tool, Args: d.Args, Status: "running"})
	case *events.ToolComplete:
		tc := res.toolCall(d.ToolCallID, d.Tool)
		tc.Status, tc.Result = "success", d.Result
	case *events.ToolError:
		tc := res.toolCall(d.ToolCallID, d.Tool)
		tc.Status, tc.Result = "error", d.Error
	case *events.ResponseDone:
		res.Response, res.Usage, res.Budget = d.Content, d.Usage, d.Budget
		if d.Citations != nil {
			res.Citations = d.Citations
		}
	case *events.RunCompleted:
		res.Usage = d.Usage
	case *events.RunInterrupted:
		res.Reason = d.Reason
		if d.Reason == string(events.PendingClarification) {
			res.Pending = newSyncPending()
			c := &clarification{ID: d.ClarificationID, Question: d.Question}
			for _, p := range d.Pending {
				if p.Kind == events.PendingClarification && p.ID == d.ClarificationID {
					c.ExpiresAt, c.OnExpiry = p.ExpiresAt, p.OnExpiry
				}
			}
			res.Pending.Clarification = c
		}
	case *events.RunFailed:
		res.Error = &d.Error
	}
	switch typ {
	case events.TypeRunCompleted:
		res.Status = string(store.RunCompleted)
	case events.TypeRunInterrupted:
		res.Status = string(store.RunInterrupted)
	case events.TypeRunCancelled:
		res.Status = string(store.RunCancelled)
	case events.TypeRunFailed:
		res.Status = string(store.RunFailed)
		if res.Error == nil {
			res.Error = &events.ErrorInfo{}
		}
	}
}

// toolCall finds the call by id, adding it when its start was not seen.
func (res *syncResponse) toolCall(id, tool string) *syncToolCall {
	for i := range res.ToolCalls {
		if res.ToolCalls[i].ToolCallID == id {
			return &res.ToolCalls[i]
		}
	}
	res.ToolCalls = append(res.ToolCalls, syncToolCall{ToolCallID: id, Tool: tool, Args: json.RawMessage("{}")})
	return &res.ToolCalls[len(res.ToolCalls)-1]
}

// serveSSE writes a run's events as SSE (see runs.Service.Follow), and
// with documents on the conversation's document.status, until
// a terminal event (it then reports true), the client leaves, the
// subscriber is cut, or the server ends its streams.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request, req runs.FollowRequest) bool {
	s.metrics.StreamsOpen(1)
	defer s.metrics.StreamsOpen(-1)
	sw := startSSE(w, req.ConversationID, req.RunID, s.cfg.StreamWriteTimeout)
	req.Heartbeat, req.Idle = s.cfg.Heartbeat, sw.Ping
	if s.docs != nil {
		defer s.docs.Watch(r.Context(), &req, sw)()
	}
	terminal, err := s.runs.Follow(r.Context(), req, func(e *runs.Event) error { return sw.Event(e.Seq, e.Type, e.Data) })
	if !terminal && r.Context().Err() == nil && !sw.Failed() {
		s.askReconnect(r, sw, req, err)
	}
	return terminal
}

// reconnectAfter is the retry a stream that ends before its run's
// terminal event gives its client: as long as Retry-After's 503 asks.
const reconnectAfter = time.Second

// reconnectData is stream.reconnect's data line: the vocabulary's
// payload with conversation_id and ts, and no seq (it is no stored
// event of the run).
type reconnectData struct {
	Type           string `json:"type"`
	ConversationID string `json:"conversation_id"`
	TS             string `json:"ts"`
	events.StreamReconnect
}

// askReconnect ends a stream that Follow left before the run's terminal
// event, the client still there, with an SSE retry and stream.reconnect
// saying why, so that no client sees its stream end silently: err is
// what ended Follow.
func (s *Server) askReconnect(r *http.Request, sw *sse.Writer, req runs.FollowRequest, err error) {
	reason := events.ReconnectError
	switch {
	case s.runs.Lost(err) || errors.Is(err, runs.ErrUnavailable):
		reason = events.ReconnectUnavailable
	case s.runs.Draining() || errors.Is(err, runs.ErrShuttingDown):
		reason = events.ReconnectShuttingDown
	case err == nil:
		reason = events.ReconnectBehind
	default:
		// A run whose conversation was deleted under the stream (by
		// another process, whose run.cancelled went with the record) is
		// no fault: the reconnect's 404 says it.
		level := slog.LevelWarn
		if errors.Is(err, store.ErrNotFound) {
			level = slog.LevelInfo
		}
		s.log.LogAttrs(r.Context(), level, "a stream ended before its run's end; its client is asked to reconnect",
			slog.String("run_id", req.RunID), slog.Any("error", err))
	}
	data, _ := json.Marshal(reconnectData{Type: events.TypeStreamReconnect, ConversationID: req.ConversationID,
		TS:              time.Now().UTC().Format(time.RFC3339Nano),
		StreamReconnect: events.StreamReconnect{RunID: req.RunID, Reason: reason, RetryMS: reconnectAfter.Milliseconds()}})
	if sw.Retry(reconnectAfter) == nil {
		_ = sw.Event(0, events.TypeStreamReconnect, data)
	}
}
