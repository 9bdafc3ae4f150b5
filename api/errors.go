package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/trellis-ai/trellis/api/runs"
	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/mcp/elicit"
	"github.com/trellis-ai/trellis/nodes"
)

// Error is an answer the API gives on purpose: API.md's
// {"error": {"code", "message"}} with its HTTP status.
type Error struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, in seconds, is sent as Retry-After when positive.
	RetryAfter int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errorf(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// Errors the service itself answers with.
var (
	errShuttingDown = errorf(http.StatusServiceUnavailable, "shutting_down", "the server is shutting down; retry on another instance or after it restarts")
	errNothingToRun = errorf(http.StatusConflict, "not_running", "no run is running or waiting on this conversation")
	// errRunCancelling: an answer to an approval whose run the user has
	// just cancelled; the cancel won.
	errRunCancelling = errorf(http.StatusConflict, "run_cancelled", "the run was cancelled; this approval is no longer asked")
	errBusy          = errorf(http.StatusConflict, "busy", "the run has too many answers waiting; retry in a moment")
	errUnauthorized  = errorf(http.StatusUnauthorized, "unauthorized", "send a valid API key as Authorization: Bearer <key>")
	// errUnavailable answers a request to start a run while the process
	// has lost its database session, and any request that failed
	// because the database went away (with a Cluster, which tells; see
	// Cluster.Lost).
	errUnavailable = &Error{Status: http.StatusServiceUnavailable, Code: "unavailable", RetryAfter: 1,
		Message: "the server lost its database connection and is reconnecting; retry in a moment"}
)

// errorBody is API.md's error shape.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers err: an *Error as it is, the run service's, store's,
// agent's and elicitation manager's sentinels with their API.md statuses, anything
// else as a 500 whose message tells nothing but the request id (the error
// itself is logged).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.classify(r, err)
	if e == nil {
		return // the client is gone
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="trellis"`)
	}
	var body errorBody
	body.Error.Code, body.Error.Message = e.Code, e.Message
	writeJSON(w, e.Status, body)
}

func (s *Server) classify(r *http.Request, err error) *Error {
	var (
		e       *Error
		tooBig  *http.MaxBytesError
		invalid *elicit.ValidationError
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, runs.ErrShuttingDown):
		return errShuttingDown
	case errors.Is(err, runs.ErrUnavailable):
		return errUnavailable
	case errors.Is(err, runs.ErrTooManyRuns):
		return &Error{Status: http.StatusTooManyRequests, Code: "too_many_runs", RetryAfter: 1,
			Message: fmt.Sprintf("you have %d runs going, the most allowed at once; wait for one to end", s.cfg.Limits.MaxConcurrentRunsPerUser)}
	case errors.Is(err, runs.ErrNothingToRun):
		return errNothingToRun
	case errors.Is(err, runs.ErrRunCancelling):
		return errRunCancelling
	case errors.Is(err, runs.ErrBusy):
		return errBusy
	case errors.As(err, &tooBig):
		return errorf(http.StatusRequestEntityTooLarge, "body_too_large",
			"the request body is larger than "+strconv.FormatInt(tooBig.Limit, 10)+" bytes")
	case errors.As(err, &invalid):
		return errorf(http.StatusUnprocessableEntity, "invalid_content", invalid.Reason)
	case errors.Is(err, store.ErrNotFound), errors.Is(err, elicit.ErrNotFound):
		return errorf(http.StatusNotFound, "not_found", "no such resource, or it is not yours")
	case errors.Is(err, store.ErrRunActive):
		return errorf(http.StatusConflict, "run_active", "a run is already active on this conversation; wait for it, cancel it, or answer what it waits for")
	case errors.Is(err, store.ErrAlreadyResolved), errors.Is(err, elicit.ErrResolved):
		return errorf(http.StatusConflict, "already_resolved", "this was already answered, cancelled or expired")
	case errors.Is(err, store.ErrConflict):
		return errorf(http.StatusConflict, "conflict", "the request conflicts with the resource's state (an edit of a superseded run, say)")
	case errors.Is(err, nodes.ErrApprovalPending):
		return errorf(http.StatusConflict, "approval_pending", "the conversation waits for an approval; answer it first")
	case errors.Is(err, nodes.ErrNoPendingApproval):
		return errorf(http.StatusConflict, "no_pending_approval", "the run no longer waits for this approval")
	case errors.Is(err, store.ErrInvalid), errors.Is(err, nodes.ErrInvalidInput), errors.Is(err, elicit.ErrInvalidAction):
		return errorf(http.StatusBadRequest, "invalid_request", err.Error())
	case errors.Is(err, llm.ErrUnknownModel):
		return errorf(http.StatusBadRequest, "unknown_model", "no model has that id or alias; GET /api/v1/tools lists tools, the server's start line lists models")
	case r.Context().Err() != nil && errors.Is(err, context.Canceled):
		return nil
	case s.runs.Lost(err):
		return errUnavailable
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "request failed",
		slog.String("request_id", requestID(r.Context())), slog.String("path", r.URL.Path), slog.Any("error", err))
	return errorf(http.StatusInternalServerError, "internal_error", "internal error; the server logged it under request id "+requestID(r.Context()))
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":{"code":"internal_error","message":"the response could not be encoded"}}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
