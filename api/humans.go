package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/paging"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// handlePending is GET /api/v1/approvals/pending, GET
// /api/v1/elicitation/pending, GET /api/v1/clarifications/pending and
// GET /api/v1/uncertain-calls/pending (?conversation_id=&limit=&cursor=):
// a page of the user's pending human requests of the kind, as a list
// named key: the body API.md gives, with the next page's cursor in a
// header (see paging.NextCursor).
func (s *Server) handlePending(kind events.PendingKind, key string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		page, err := paging.Page(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		p, err := s.store.PendingHumanRequests(r.Context(), kind, userOf(r), r.URL.Query().Get("conversation_id"), page)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		paging.NextCursor(w, p.NextCursor)
		jsonbody.Write(w, http.StatusOK, map[string][]store.HumanRequest{key: p.Requests})
	}
}

// approvalRequest is the body of POST /api/v1/approvals/{approval_id}.
type approvalRequest struct {
	Decision events.DecisionKind `json:"decision"`
	Args     json.RawMessage     `json:"args"`
	Reason   string              `json:"reason"`
}

// handleApproval is POST /api/v1/approvals/{approval_id}: the answer is
// recorded (the first of concurrent answers wins; the others get 409),
// then the run continues on its open stream or, parked, in the
// background.
func (s *Server) handleApproval(w http.ResponseWriter, r *http.Request) {
	var body approvalRequest
	if err := jsonbody.Decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	ans := store.ApprovalAnswer{Decision: body.Decision, Args: body.Args, Reason: body.Reason}
	if err := ans.Validate(); err != nil {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_decision",
			`"decision" must be approve, edit (with "args", a JSON object) or reject (with an optional "reason")`))
		return
	}
	if body.Decision != events.DecisionEdit {
		ans.Args = nil
	}
	user, id := userOf(r), r.PathValue("approval_id")
	a, err := s.runs.AnswerApproval(r.Context(), user, id, ans)
	s.decided(w, r, "approval", a, err, string(body.Decision))
}

// decided answers a person's decision on a human request of the kind
// ("approval", "uncertain_call"): the error, logged as well when the
// decision was recorded but its run could not take it (a warning, but
// for a run whose conversation is being deleted, which is as good as
// gone: the 404 says it all); else processed.
func (s *Server) decided(w http.ResponseWriter, r *http.Request, kind string, h store.HumanRequest, err error, decision string) {
	if err != nil {
		if h.ID != "" {
			level := slog.LevelWarn
			if errors.Is(err, store.ErrNotFound) {
				level = slog.LevelInfo
			}
			s.log.LogAttrs(r.Context(), level, "an answered "+kind+" could not resume its run",
				slog.String(kind+"_id", h.ID), slog.String("run_id", h.RunID), slog.Any("error", err))
		}
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, map[string]string{"status": "processed", kind + "_id": h.ID, "decision": decision})
}

// uncertainCallRequest is the body of POST
// /api/v1/uncertain-calls/{uncertain_call_id}.
type uncertainCallRequest struct {
	Decision events.CallDecision `json:"decision"`
}

// handleUncertainCall is POST /api/v1/uncertain-calls/{uncertain_call_id}:
// a person's decision on a call a recovered run found started and not
// ended. The decision is recorded (the first of concurrent ones wins;
// the others get 409) and the parked run continues in the background.
func (s *Server) handleUncertainCall(w http.ResponseWriter, r *http.Request) {
	var body uncertainCallRequest
	if err := jsonbody.Decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	ans := store.CallAnswer{Decision: body.Decision}
	if err := ans.Validate(); err != nil {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_decision", `"decision" must be retry, skip or fail`))
		return
	}
	user, id := userOf(r), r.PathValue("uncertain_call_id")
	h, err := s.runs.AnswerUncertainCall(r.Context(), user, id, ans)
	s.decided(w, r, "uncertain_call", h, err, string(body.Decision))
}

// elicitationRequest is the body of POST /api/v1/elicitation/respond.
type elicitationRequest struct {
	ElicitationID string              `json:"elicitation_id"`
	Action        events.ElicitAction `json:"action"`
	Content       json.RawMessage     `json:"content"`
}

// handleElicitationRespond is POST /api/v1/elicitation/respond.
func (s *Server) handleElicitationRespond(w http.ResponseWriter, r *http.Request) {
	var body elicitationRequest
	if err := jsonbody.Decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if strings.TrimSpace(body.ElicitationID) == "" {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_field", `"elicitation_id" is required`))
		return
	}
	ans := store.ElicitationAnswer{Action: body.Action, Content: body.Content}
	if body.Action != events.ElicitAccept {
		ans.Content = nil
	}
	if err := ans.Validate(); err != nil {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_field",
			`"action" must be accept, decline or cancel, and "content", when given, a JSON object`))
		return
	}
	if err := s.runs.AnswerElicitation(r.Context(), userOf(r), body.ElicitationID, ans); err != nil {
		s.writeError(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, map[string]string{"status": "processed", "elicitation_id": body.ElicitationID, "action": string(body.Action)})
}

// handleElicitationCancel is DELETE /api/v1/elicitation/{id}: the waiting
// tool sees a cancel.
func (s *Server) handleElicitationCancel(w http.ResponseWriter, r *http.Request) {
	if err := s.runs.CancelElicitation(r.Context(), userOf(r), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleTools is GET /api/v1/tools.
func (s *Server) handleTools(w http.ResponseWriter, r *http.Request) {
	tools := []operators.ToolInfo{}
	if s.cfg.Tools != nil {
		if t := s.cfg.Tools.Tools(); t != nil {
			tools = t
		}
	}
	jsonbody.Write(w, http.StatusOK, map[string][]operators.ToolInfo{"tools": tools})
}

// answersRequest is the body of POST
// /api/v1/conversations/{id}/runs/{run_id}/answers.
type answersRequest struct {
	Answers []approvalAnswer `json:"answers"`
}

// approvalAnswer is one approval's answer in an answersRequest.
type approvalAnswer struct {
	ApprovalID string `json:"approval_id"`
	approvalRequest
}

// handleAnswers is POST /api/v1/conversations/{id}/runs/{run_id}/answers:
// the run's pending approvals answered at once, each with its own
// decision, all or nothing: every answer is checked, and every approval
// found pending and of the run, before any is recorded (runs.Answer).
// The run continues as after POST /approvals/{id}.
func (s *Server) handleAnswers(w http.ResponseWriter, r *http.Request) {
	ids, answers, err := decodeAnswers(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	runID := r.PathValue("run_id")
	res, err := s.runs.Answer(r.Context(), runs.AnswerRequest{User: userOf(r), ConversationID: r.PathValue("id"), IDs: ids,
		Decide: func(i int, hr runs.HumanRequest) (runs.Answer, error) {
			if hr.Kind != events.PendingApproval || hr.RunID != runID {
				return runs.Answer{}, store.ErrNotFound
			}
			return runs.Answer{Approval: answers[i]}, nil
		}})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res.Follow.Sub.Close() // the run goes on; its stream is the conversation's
	out := answersResponse{Status: "processed", RunID: runID, Answers: make([]answered, len(ids))}
	for i, id := range ids {
		out.Answers[i] = answered{ApprovalID: id, Decision: answers[i].Decision}
	}
	jsonbody.Write(w, http.StatusOK, out)
}

// decodeAnswers decodes and checks the body of POST .../answers: the
// approvals' ids, each given once, and their answers, in order. Any
// mistake is a 400 *Error naming the answer.
func decodeAnswers(r *http.Request) ([]string, []store.ApprovalAnswer, error) {
	var body answersRequest
	if err := jsonbody.Decode(r, &body); err != nil {
		return nil, nil, err
	}
	if len(body.Answers) == 0 {
		return nil, nil, errorf(http.StatusBadRequest, "invalid_field", `"answers" must hold at least one answer`)
	}
	ids := make([]string, len(body.Answers))
	answers := make([]store.ApprovalAnswer, len(body.Answers))
	seen := map[string]bool{}
	for i, a := range body.Answers {
		id := strings.TrimSpace(a.ApprovalID)
		if id == "" || seen[id] {
			return nil, nil, errorf(http.StatusBadRequest, "invalid_field",
				fmt.Sprintf(`answer %d: "approval_id" is required, and each approval is answered once`, i))
		}
		seen[id] = true
		ans := store.ApprovalAnswer{Decision: a.Decision, Args: a.Args, Reason: a.Reason}
		if err := ans.Validate(); err != nil {
			return nil, nil, errorf(http.StatusBadRequest, "invalid_decision", fmt.Sprintf(
				`answer %d: "decision" must be approve, edit (with "args", a JSON object) or reject (with an optional "reason")`, i))
		}
		if a.Decision != events.DecisionEdit {
			ans.Args = nil
		}
		ids[i], answers[i] = id, ans
	}
	return ids, answers, nil
}

// answersResponse is POST .../answers' answer.
type answersResponse struct {
	Status  string     `json:"status"`
	RunID   string     `json:"run_id"`
	Answers []answered `json:"answers"`
}

type answered struct {
	ApprovalID string              `json:"approval_id"`
	Decision   events.DecisionKind `json:"decision"`
}
