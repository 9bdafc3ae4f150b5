package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/mcp/elicit"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// handlePendingApprovals is GET /api/v1/approvals/pending?conversation_id=.
func (s *Server) handlePendingApprovals(w http.ResponseWriter, r *http.Request) {
	as, err := s.store.PendingApprovals(r.Context(), userOf(r), r.URL.Query().Get("conversation_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if as == nil {
		as = []store.Approval{}
	}
	writeJSON(w, http.StatusOK, map[string][]store.Approval{"approvals": as})
}

// approvalRequest is the body of POST /api/v1/approvals/{approval_id}.
type approvalRequest struct {
	Decision store.Decision  `json:"decision"`
	Args     json.RawMessage `json:"args"`
	Reason   string          `json:"reason"`
}

// handleApproval is POST /api/v1/approvals/{approval_id}: the answer is
// recorded (the first of concurrent answers wins; the others get 409),
// then the run continues on its open stream or, parked, in the
// background.
func (s *Server) handleApproval(w http.ResponseWriter, r *http.Request) {
	var body approvalRequest
	if err := decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	ans := store.ApprovalAnswer{Decision: body.Decision, Args: body.Args, Reason: body.Reason}
	if err := ans.Validate(); err != nil {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_decision",
			`"decision" must be approve, edit (with "args", a JSON object) or reject (with an optional "reason")`))
		return
	}
	if body.Decision != store.DecisionEdit {
		ans.Args = nil
	}
	user, id := userOf(r), r.PathValue("approval_id")
	d := nodes.ApprovalDecision{ApprovalID: id, Decision: nodes.DecisionKind(body.Decision), Args: ans.Args, Reason: body.Reason}
	a, err := s.runs.answerApproval(r.Context(), user, id, ans, d)
	if err != nil {
		if a.ID != "" { // recorded, but its run could not take it
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "an answered approval could not resume its run",
				slog.String("approval_id", id), slog.String("run_id", a.RunID), slog.Any("error", err))
		}
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "processed", "approval_id": id, "decision": string(body.Decision)})
}

// elicitationRequest is the body of POST /api/v1/elicitation/respond.
type elicitationRequest struct {
	ElicitationID string                  `json:"elicitation_id"`
	Action        store.ElicitationAction `json:"action"`
	Content       json.RawMessage         `json:"content"`
}

// handleElicitationRespond is POST /api/v1/elicitation/respond.
func (s *Server) handleElicitationRespond(w http.ResponseWriter, r *http.Request) {
	var body elicitationRequest
	if err := decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if strings.TrimSpace(body.ElicitationID) == "" {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_field", `"elicitation_id" is required`))
		return
	}
	ans := store.ElicitationAnswer{Action: body.Action, Content: body.Content}
	if body.Action != store.ActionAccept {
		ans.Content = nil
	}
	if err := ans.Validate(); err != nil {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid_field",
			`"action" must be accept, decline or cancel, and "content", when given, a JSON object`))
		return
	}
	user := userOf(r)
	e, err := s.pendingElicitation(r, body.ElicitationID)
	if err == nil {
		err = s.elicit.Respond(user, operators.ElicitResponse{ElicitationID: e.ID, Action: operators.ElicitAction(body.Action), Content: ans.Content})
		if errors.Is(err, elicit.ErrNotFound) || errors.Is(err, elicit.ErrResolved) { // no tool waits here (the store says it is pending)
			err = s.answerElicitation(r.Context(), user, e, ans, store.NoticeElicitation)
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The waiting tool has the answer; the store may have it already too.
	if _, err := s.store.ResolveElicitation(r.Context(), user, e.ID, ans); err != nil && !errors.Is(err, store.ErrAlreadyResolved) {
		s.log.LogAttrs(r.Context(), slog.LevelError, "recording an elicitation answer failed", slog.String("elicitation_id", e.ID), slog.Any("error", err))
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "processed", "elicitation_id": e.ID, "action": string(body.Action)})
}

// answerElicitation takes the answer (or cancel) to an elicitation no tool
// in this process waits for: the tool waits in another process (which is
// told), or its run is parked on it (and resumes with the answer), or its
// run is on its way to asking it again (and finds the answer stored).
// The content is checked against the question's schema first (422), and
// of concurrent answers the first stored wins (409 for the others).
func (s *Server) answerElicitation(ctx context.Context, user string, e store.Elicitation, ans store.ElicitationAnswer, kind store.NoticeKind) error {
	if handled, err := s.elicitationElsewhere(ctx, user, e, ans, kind); handled {
		return err
	}
	if err := validAnswer(e, ans); err != nil {
		return err
	}
	e, err := s.store.ResolveElicitation(ctx, user, e.ID, ans)
	if err != nil {
		return err
	}
	return s.runs.elicitationAnswered(ctx, e)
}

// pendingElicitation returns the user's pending elicitation, once the
// tool waiting for it can take an answer.
func (s *Server) pendingElicitation(r *http.Request, id string) (store.Elicitation, error) {
	e, err := s.store.GetElicitation(r.Context(), userOf(r), id)
	if err != nil {
		return e, err
	}
	if e.Status != store.ElicitationPending {
		return e, store.ErrAlreadyResolved
	}
	s.runs.awaitElicitation(r.Context(), e)
	return e, nil
}

// handlePendingElicitations is GET /api/v1/elicitation/pending?conversation_id=.
func (s *Server) handlePendingElicitations(w http.ResponseWriter, r *http.Request) {
	es, err := s.store.PendingElicitations(r.Context(), userOf(r), r.URL.Query().Get("conversation_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if es == nil {
		es = []store.Elicitation{}
	}
	writeJSON(w, http.StatusOK, map[string][]store.Elicitation{"elicitations": es})
}

// handleElicitationCancel is DELETE /api/v1/elicitation/{id}: the waiting
// tool sees a cancel.
func (s *Server) handleElicitationCancel(w http.ResponseWriter, r *http.Request) {
	user := userOf(r)
	e, err := s.pendingElicitation(r, r.PathValue("id"))
	if err == nil {
		err = s.elicit.Cancel(user, e.ID)
		if errors.Is(err, elicit.ErrNotFound) || errors.Is(err, elicit.ErrResolved) {
			err = s.answerElicitation(r.Context(), user, e, store.ElicitationAnswer{Action: store.ActionCancel}, store.NoticeElicitationCancel)
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.store.ResolveElicitation(r.Context(), user, e.ID, store.ElicitationAnswer{Action: store.ActionCancel}); err != nil && !errors.Is(err, store.ErrAlreadyResolved) {
		s.log.LogAttrs(r.Context(), slog.LevelError, "recording an elicitation cancel failed", slog.String("elicitation_id", e.ID), slog.Any("error", err))
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
	writeJSON(w, http.StatusOK, map[string][]operators.ToolInfo{"tools": tools})
}
