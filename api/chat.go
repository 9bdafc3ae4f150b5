package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// chatRequest is the body of POST /chat and /chat/sync.
type chatRequest struct {
	Message        string          `json:"message"`
	ConversationID string          `json:"conversation_id"`
	Model          string          `json:"model"`
	DocumentIDs    []string        `json:"document_ids"`
	Context        json.RawMessage `json:"context"`
}

// editRequest is the body of POST /conversations/{id}/runs/{run_id}/edit.
type editRequest struct {
	Message string `json:"message"`
}

// message validates a chat message: not empty, not too long.
func (s *Server) message(msg string) (string, error) {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return "", errorf(http.StatusBadRequest, "empty_message", `"message" is required and must not be empty`)
	}
	if limit := s.cfg.Limits.MaxMessageRunes; limit > 0 && utf8.RuneCountInString(msg) > limit {
		return "", errorf(http.StatusBadRequest, "message_too_long", fmt.Sprintf("the message is longer than %d characters", limit))
	}
	return msg, nil
}

// chatStart decodes and validates a chat request.
func (s *Server) chatStart(r *http.Request, interactive bool) (startRequest, error) {
	var body chatRequest
	if err := decode(r, &body); err != nil {
		return startRequest{}, err
	}
	msg, err := s.message(body.Message)
	if err != nil {
		return startRequest{}, err
	}
	if body.Model != "" {
		if _, err := s.models.Resolve(body.Model); err != nil {
			return startRequest{}, err
		}
	}
	if c := bytes.TrimSpace(body.Context); len(c) > 0 && !bytes.Equal(c, []byte("null")) && c[0] != '{' {
		return startRequest{}, errorf(http.StatusBadRequest, "invalid_field", `"context" must be a JSON object`)
	}
	for _, id := range body.DocumentIDs {
		if strings.TrimSpace(id) == "" {
			return startRequest{}, errorf(http.StatusBadRequest, "invalid_field", `"document_ids" must not hold empty ids`)
		}
	}
	in := nodes.Input{Message: msg, Model: body.Model, DocumentIDs: body.DocumentIDs}
	if c := bytes.TrimSpace(body.Context); len(c) > 0 && c[0] == '{' {
		in.Context = c
	}
	return startRequest{userID: userOf(r), conversationID: strings.TrimSpace(body.ConversationID),
		requestID: requestID(r.Context()), input: in, interactive: interactive}, nil
}

// handleChat is POST /api/v1/chat: a run, streamed as SSE.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	req, err := s.chatStart(r, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rn, sub, err := s.runs.start(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.serveRun(w, r, rn, sub)
}

// handleEdit is POST /api/v1/conversations/{id}/runs/{run_id}/edit: the
// run's message replaced, rerun from the state before it, streamed as SSE.
func (s *Server) handleEdit(w http.ResponseWriter, r *http.Request) {
	var body editRequest
	if err := decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	msg, err := s.message(body.Message)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	user := userOf(r)
	old, err := s.store.GetRun(r.Context(), user, r.PathValue("run_id"))
	if err == nil && old.ConversationID != r.PathValue("id") {
		err = store.ErrNotFound
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rn, sub, err := s.runs.start(r.Context(), startRequest{userID: user, conversationID: old.ConversationID,
		requestID: requestID(r.Context()), input: nodes.Input{Message: msg}, edit: &old, interactive: true})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.serveRun(w, r, rn, sub)
}

// serveRun streams a run its request started; a client leaving cancels
// the run only with CancelOnDisconnect.
func (s *Server) serveRun(w http.ResponseWriter, r *http.Request, rn *run, sub *subscriber) {
	defer s.runs.unsubscribe(sub)
	terminal := s.serveSSE(w, r, rn.conversationID, rn.id, sub, 0, false)
	if !terminal && s.cfg.CancelOnDisconnect && r.Context().Err() != nil {
		rn.cancel(errDisconnected)
	}
}

// syncResponse is POST /chat/sync's answer. Reason and Error are
// additions: why an interrupted run waits, and how a failed one failed.
type syncResponse struct {
	ConversationID string           `json:"conversation_id"`
	RunID          string           `json:"run_id"`
	RequestID      string           `json:"request_id"`
	Status         string           `json:"status"`
	Response       string           `json:"response"`
	Usage          llm.TokenUsage   `json:"usage"`
	ToolCalls      []syncToolCall   `json:"tool_calls"`
	Citations      []nodes.Citation `json:"citations"`
	Pending        *syncPending     `json:"pending,omitempty"`
	Reason         string           `json:"reason,omitempty"`
	Error          *nodes.ErrorInfo `json:"error,omitempty"`
}

type syncToolCall struct {
	ToolCallID string          `json:"tool_call_id"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Status     string          `json:"status"`
	Result     string          `json:"result"`
}

// syncPending is what an interrupted run waits for; Clarification is an
// addition for runs that asked a question.
type syncPending struct {
	Approvals     []store.Approval    `json:"approvals"`
	Elicitations  []store.Elicitation `json:"elicitations"`
	Clarification *clarification      `json:"clarification,omitempty"`
}

type clarification struct {
	ID       string `json:"id"`
	Question string `json:"question"`
}

// handleChatSync is POST /api/v1/chat/sync: a run, answered as one JSON
// object once it ends or is parked.
func (s *Server) handleChatSync(w http.ResponseWriter, r *http.Request) {
	req, err := s.chatStart(r, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rn, sub, err := s.runs.start(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The response comes when the run ends, later than the server's
	// WriteTimeout may allow.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	res := syncResponse{ConversationID: rn.conversationID, RunID: rn.id, RequestID: rn.requestID,
		ToolCalls: []syncToolCall{}, Citations: []nodes.Citation{}}
	user := userOf(r)
	var last int64
	// stored folds the stored events after last into the response.
	stored := func() (done bool, err error) {
		err = s.eachStored(r.Context(), user, rn.id, last, func(e *store.Event) bool {
			last = e.Seq
			done = res.apply(e)
			return done
		})
		return done, err
	}
	var poll <-chan time.Time
	if s.cfg.Cluster != nil {
		pt := time.NewTicker(clusterPoll)
		defer pt.Stop()
		poll = pt.C
	}
	for done := false; !done; {
		select {
		case <-poll:
			if s.runs.runsHere(rn.conversationID, rn.id) {
				continue
			}
			// Taken over by another process: it publishes the rest
			// there, and stores it.
			var err error
			if done, err = stored(); err != nil {
				s.runs.unsubscribe(sub)
				s.writeError(w, r, err)
				return
			}
		case e, ok := <-sub.ch:
			if !ok { // cut: pick up from the store
				s.runs.unsubscribe(sub)
				sub = s.runs.subscribe(rn.id, false)
				var err error
				if done, err = stored(); err != nil {
					s.runs.unsubscribe(sub)
					s.writeError(w, r, err)
					return
				}
				continue
			}
			if e.Seq <= last {
				continue
			}
			last = e.Seq
			done = res.apply(e)
		case <-r.Context().Done():
			s.runs.unsubscribe(sub)
			if s.cfg.CancelOnDisconnect {
				rn.cancel(errDisconnected)
			}
			return
		}
	}
	s.runs.unsubscribe(sub)
	if res.Status == string(store.RunInterrupted) && res.Reason == string(nodes.PendingApproval) {
		res.Pending = &syncPending{Approvals: []store.Approval{}, Elicitations: []store.Elicitation{}}
		approvals, err := s.store.PendingApprovals(r.Context(), user, rn.conversationID)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		for _, a := range approvals {
			if a.RunID == rn.id {
				res.Pending.Approvals = append(res.Pending.Approvals, a)
			}
		}
	}
	writeJSON(w, http.StatusOK, res)
}

// apply folds one event into the response; it reports whether the event
// was the run's terminal one.
func (res *syncResponse) apply(e *store.Event) bool {
	switch e.Type {
	case "tool.start":
		var d nodes.ToolStart
		if json.Unmarshal(e.Data, &d) == nil {
			res.ToolCalls = append(res.ToolCalls, syncToolCall{ToolCallID: d.ToolCallID, Tool: d.Tool, Args: d.Args, Status: "running"})
		}
	case "tool.complete":
		var d nodes.ToolComplete
		if json.Unmarshal(e.Data, &d) == nil {
			tc := res.toolCall(d.ToolCallID, d.Tool)
			tc.Status, tc.Result = "success", d.Result
		}
	case "tool.error":
		var d nodes.ToolErrorEvent
		if json.Unmarshal(e.Data, &d) == nil {
			tc := res.toolCall(d.ToolCallID, d.Tool)
			tc.Status, tc.Result = "error", d.Error
		}
	case "response.done":
		var d nodes.ResponseDone
		if json.Unmarshal(e.Data, &d) == nil {
			res.Response, res.Usage = d.Content, d.Usage
			if d.Citations != nil {
				res.Citations = d.Citations
			}
		}
	case "run.completed":
		var d nodes.RunCompleted
		if json.Unmarshal(e.Data, &d) == nil {
			res.Usage = d.Usage
		}
		res.Status = string(store.RunCompleted)
		return true
	case "run.interrupted":
		var d nodes.RunInterrupted
		_ = json.Unmarshal(e.Data, &d)
		res.Status, res.Reason = string(store.RunInterrupted), d.Reason
		if d.Reason == string(nodes.PendingClarification) {
			res.Pending = &syncPending{Approvals: []store.Approval{}, Elicitations: []store.Elicitation{},
				Clarification: &clarification{ID: d.ClarificationID, Question: d.Question}}
		}
		return true
	case "run.cancelled":
		res.Status = string(store.RunCancelled)
		return true
	case "run.failed":
		var d nodes.RunFailed
		_ = json.Unmarshal(e.Data, &d)
		res.Status, res.Error = string(store.RunFailed), &d.Error
		return true
	}
	return false
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

// serveSSE writes a run's events as SSE: after `after`, from the store
// first when replay is set, then live from sub, until a terminal event
// (it then reports true), the client leaves, the subscriber is cut, or
// the server ends its streams.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request, conversationID, runID string, sub *subscriber, after int64, replay bool) bool {
	s.metrics.openStreams.Add(1)
	defer s.metrics.openStreams.Add(-1)
	sw := startSSE(w, conversationID, runID, s.cfg.StreamWriteTimeout)
	return s.follow(r.Context(), sw, sub, userOf(r), conversationID, runID, after, replay)
}

// clusterPoll is how often a stream reads the store for the events of a
// run that another process runs: that process publishes them to its own
// streams only.
const clusterPoll = 250 * time.Millisecond

// replayPage is how many stored events a stream or a sync request reads
// at once, so that what it holds of a run is a page however long the run.
const replayPage = 256

// eachStored calls fn with each of the run's stored events after after,
// in order, reading them a page at a time, until fn says stop or the
// stored events run out.
func (s *Server) eachStored(ctx context.Context, user, runID string, after int64, fn func(*store.Event) (stop bool)) error {
	for {
		evs, err := s.readPage(ctx, user, runID, after)
		if err != nil {
			return err
		}
		for i := range evs {
			if fn(&evs[i]) {
				return nil
			}
		}
		if len(evs) < replayPage {
			return nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// readPage reads a page of the run's events after after, in a slot of
// pageReads.
func (s *Server) readPage(ctx context.Context, user, runID string, after int64) ([]store.Event, error) {
	select {
	case s.pageReads <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.pageReads }()
	return s.store.EventsAfter(ctx, user, runID, after, replayPage)
}

func (s *Server) follow(ctx context.Context, sw *sseWriter, sub *subscriber, user, conversationID, runID string, after int64, replay bool) bool {
	last := after
	// one writes an event if it comes after last; it reports whether it
	// was terminal (done) and whether writing failed (fail).
	one := func(e *store.Event) (done, fail bool) {
		if e.Seq <= last {
			return false, false
		}
		if sw.event(e.Seq, e.Type, e.Data) != nil {
			return false, true
		}
		last = e.Seq
		return isTerminal(e.Type), false
	}
	// catchUp sends the stored events after last, a page at a time.
	catchUp := func() (done, fail bool) {
		err := s.eachStored(ctx, user, runID, last, func(e *store.Event) bool {
			done, fail = one(e)
			return done || fail
		})
		return done, fail || err != nil
	}
	// live sends one live event, first filling from the store a gap
	// before it, which is not expected.
	live := func(e *store.Event) (done, fail bool) {
		if e.Seq > last+1 {
			return catchUp()
		}
		return one(e)
	}
	if replay {
		if done, fail := catchUp(); done || fail {
			return done
		}
	}
	tick := time.NewTicker(s.cfg.Heartbeat)
	defer tick.Stop()
	var poll <-chan time.Time
	if s.cfg.Cluster != nil {
		pt := time.NewTicker(clusterPoll)
		defer pt.Stop()
		poll = pt.C
	}
	sw.wrote = false
	for {
		select {
		case <-poll:
			if s.runs.runsHere(conversationID, runID) {
				continue
			}
			if done, fail := catchUp(); done || fail {
				return done
			}
		case e, ok := <-sub.ch:
			if !ok {
				return false // cut: too far behind
			}
			if done, fail := live(e); done || fail {
				return done
			}
		case <-tick.C:
			if !sw.wrote && sw.ping() != nil {
				return false
			}
			sw.wrote = false
		case <-ctx.Done():
			return false
		case <-s.life.Done():
			// Shutdown ends streams once the runs have stopped, so what
			// they published last (their terminal events) is queued
			// here: send it before leaving.
			for {
				select {
				case e, ok := <-sub.ch:
					if !ok {
						return false
					}
					if done, fail := live(e); done || fail {
						return done
					}
				default:
					return false
				}
			}
		}
	}
}
