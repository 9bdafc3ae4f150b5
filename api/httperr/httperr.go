package httperr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// Problem is an error as HTTP answers it.
type Problem struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, in seconds, is sent as Retry-After when positive.
	RetryAfter int
}

func (p *Problem) Error() string { return p.Code + ": " + p.Message }

// New returns a problem with no Retry-After.
func New(status int, code, message string) *Problem {
	return &Problem{Status: status, Code: code, Message: message}
}

// Header sets the headers p asks for on h: Retry-After.
func (p *Problem) Header(h http.Header) {
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
}

// Invalid is a 400 invalid_request whose message says what is wrong
// with the request: how every surface refuses what it cannot decode.
func Invalid(format string, args ...any) *Problem {
	return New(http.StatusBadRequest, "invalid_request", fmt.Sprintf(format, args...))
}

// DecodeBody decodes r, a request body, into v, which must be the body's
// one JSON value; what names the shape expected, for the message. A body
// that does not decode, or that holds more than one value, is Invalid.
func DecodeBody(r io.Reader, v any, what string) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		return Invalid("the body is not %s: %v", what, err)
	}
	if dec.More() {
		return Invalid("the body holds more than one JSON value")
	}
	return nil
}

// Problems the classification answers with, for callers that answer
// them before any error exists.
var (
	ShuttingDown = New(http.StatusServiceUnavailable, "shutting_down",
		"the server is shutting down; retry on another instance or after it restarts")
	// Unavailable answers a request that failed because the database
	// went away, or a run asked for while the process has lost it.
	Unavailable = &Problem{Status: http.StatusServiceUnavailable, Code: "unavailable", RetryAfter: 1,
		Message: "the server lost its database connection and is reconnecting; retry in a moment"}
	TooManyRuns = &Problem{Status: http.StatusTooManyRequests, Code: "too_many_runs", RetryAfter: 1,
		Message: "you have the most runs going at once that are allowed; wait for one to end"}
	NothingToRun = New(http.StatusConflict, "not_running", "no run is running or waiting on this conversation")
	NotRetryable = New(http.StatusConflict, "not_retryable",
		"only the conversation's last run can be retried, once it failed after it began; edit its message instead")
	// RunCancelling answers an answer to a question whose run the user
	// has just cancelled: the cancel won.
	RunCancelling = New(http.StatusConflict, "run_cancelled", "the run was cancelled; this approval is no longer asked")
	Busy          = New(http.StatusConflict, "busy", "the run has too many answers waiting; retry in a moment")
	NotFound      = New(http.StatusNotFound, "not_found", "no such resource, or it is not yours")
	// Forbidden answers a user who is not one of the server's operators
	// on an operator's endpoint.
	Forbidden = New(http.StatusForbidden, "forbidden",
		"only the server's operators may read this; an operator is named in TRELLIS_ADMIN_USERS")
	RunActive = New(http.StatusConflict, "run_active",
		"a run is already active on this conversation; wait for it, cancel it, or answer what it waits for")
	AlreadyResolved = New(http.StatusConflict, "already_resolved", "this was already answered, cancelled or expired")
	Conflict        = New(http.StatusConflict, "conflict",
		"the request conflicts with the resource's state (an edit of a superseded run, say)")
	ApprovalPending   = New(http.StatusConflict, "approval_pending", "the conversation waits for an approval; answer it first")
	NoPendingApproval = New(http.StatusConflict, "no_pending_approval", "the run no longer waits for this approval")
	// Erasing answers a write of a user whose erasure (DELETE /me) is
	// under way: what it would store would not outlive the erasure.
	Erasing = New(http.StatusConflict, "erasure_in_progress",
		"your account is being erased; nothing new is stored until GET /api/v1/me/erasure says completed")
	UnknownModel = New(http.StatusBadRequest, "unknown_model",
		"no model has that id or alias; GET /api/v1/tools lists tools, the server's start line lists models")
)

// Of returns err's problem: a *Problem in err's chain as it is, a
// sentinel of the run service, the record or the agent with its meaning
// (an answer that does not fit its question's schema as 422), an
// over-long body as 413; nil for anything else, which the caller answers
// as an internal error (and logs).
func Of(err error) *Problem {
	var (
		p       *Problem
		tooBig  *http.MaxBytesError
		invalid *runs.ValidationError
		tooLong *runs.MessageTooLongError
		quota   *runs.QuotaError
	)
	switch {
	case errors.As(err, &p):
		return p
	case errors.Is(err, runs.ErrOtherRun):
		return Invalid("the answers are to human requests of different runs")
	case errors.As(err, &tooBig):
		return New(http.StatusRequestEntityTooLarge, "body_too_large",
			"the request body is larger than "+strconv.FormatInt(tooBig.Limit, 10)+" bytes")
	case errors.As(err, &tooLong):
		return New(http.StatusBadRequest, "message_too_long",
			"the message is longer than "+strconv.Itoa(tooLong.Most)+" characters")
	case errors.Is(err, runs.ErrContextTooLarge):
		return New(http.StatusBadRequest, "context_too_large",
			"the context object is larger than "+strconv.Itoa(runs.MaxContextBytes)+" bytes as compact JSON")
	case errors.As(err, &quota):
		return &Problem{Status: http.StatusTooManyRequests, Code: "quota_exceeded",
			RetryAfter: max(1, int(time.Until(quota.Resets).Seconds())+1),
			Message: "your monthly token quota (" + strconv.FormatInt(quota.Quota, 10) + " tokens) is used up: " +
				strconv.FormatInt(quota.Used, 10) + " tokens this month; it resets at " + quota.Resets.Format(time.RFC3339)}
	case errors.As(err, &invalid): // before store.ErrInvalid, which it wraps
		return New(http.StatusUnprocessableEntity, "invalid_content", invalid.Reason)
	}
	for _, k := range known {
		if errors.Is(err, k.err) {
			return k.problem
		}
	}
	switch {
	case errors.Is(err, store.ErrInvalid), errors.Is(err, nodes.ErrInvalidInput):
		return Invalid("%s", err.Error())
	case errors.Is(err, llm.ErrUnknownModel):
		return UnknownModel
	}
	return nil
}

// known are the sentinels that each mean one problem, in the order Of
// tries them.
var known = []struct {
	err     error
	problem *Problem
}{
	{runs.ErrShuttingDown, ShuttingDown},
	{runs.ErrUnavailable, Unavailable},
	{runs.ErrTooManyRuns, TooManyRuns},
	{runs.ErrNothingToRun, NothingToRun},
	{runs.ErrNotRetryable, NotRetryable},
	{runs.ErrRunCancelling, RunCancelling},
	{runs.ErrBusy, Busy},
	{store.ErrNotFound, NotFound},
	{nodes.ErrUnknownTurn, NotFound},
	{store.ErrRunActive, RunActive},
	{store.ErrAlreadyResolved, AlreadyResolved},
	{store.ErrConflict, Conflict},
	{store.ErrErasing, Erasing},
	{nodes.ErrApprovalPending, ApprovalPending},
	{nodes.ErrNoPendingApproval, NoPendingApproval},
}

// body is API.md's error shape.
type body struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Write answers p in API.md's error shape, {"error": {"code",
// "message"}}, with its status and headers.
func Write(w http.ResponseWriter, p *Problem) {
	var b body
	b.Error.Code, b.Error.Message = p.Code, p.Message
	data, _ := json.Marshal(b) // two strings: cannot fail
	p.Header(w.Header())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(data, '\n'))
}

// Internal is the problem of an error Of does not know: a 500 whose
// message says where the cause was logged, never the cause itself.
func Internal(where string) *Problem {
	return New(http.StatusInternalServerError, "internal_error", "internal error; the server logged it"+where)
}

// Reply answers err as Of classifies it. An error Of does not know is
// the server's: it is logged as what failed, and the client gets an
// internal error.
func Reply(w http.ResponseWriter, r *http.Request, log *slog.Logger, what string, err error) {
	p := Of(err)
	if p == nil {
		log.LogAttrs(r.Context(), slog.LevelError, what, slog.Any("error", err))
		p = Internal("")
	}
	Write(w, p)
}
