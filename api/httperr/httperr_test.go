package httperr_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

func TestOf(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("somewhere: %w", err) }
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{runs.ErrShuttingDown, 503, "shutting_down"},
		{runs.ErrUnavailable, 503, "unavailable"},
		{runs.ErrTooManyRuns, 429, "too_many_runs"},
		{runs.ErrNothingToRun, 409, "not_running"},
		{runs.ErrRunCancelling, 409, "run_cancelled"},
		{runs.ErrBusy, 409, "busy"},
		{store.ErrNotFound, 404, "not_found"},
		{nodes.ErrUnknownTurn, 404, "not_found"},
		{store.ErrRunActive, 409, "run_active"},
		{store.ErrAlreadyResolved, 409, "already_resolved"},
		{store.ErrConflict, 409, "conflict"},
		{nodes.ErrApprovalPending, 409, "approval_pending"},
		{nodes.ErrNoPendingApproval, 409, "no_pending_approval"},
		{fmt.Errorf("runs: answer 1, a2: %w", runs.ErrOtherRun), 400, "invalid_request"},
		{store.ErrInvalid, 400, "invalid_request"},
		{nodes.ErrInvalidInput, 400, "invalid_request"},
		{llm.ErrUnknownModel, 400, "unknown_model"},
		{&http.MaxBytesError{Limit: 10}, 413, "body_too_large"},
		{&runs.ValidationError{Reason: "age: want a number"}, 422, "invalid_content"},
		{httperr.New(418, "teapot", "short and stout"), 418, "teapot"},
	} {
		for _, err := range []error{tc.err, wrap(tc.err)} {
			p := httperr.Of(err)
			if p == nil || p.Status != tc.status || p.Code != tc.code || p.Message == "" {
				t.Errorf("Of(%v) = %+v, want %d %s with a message", err, p, tc.status, tc.code)
			}
		}
	}
	if p := httperr.Of(errors.New("disk on fire")); p != nil {
		t.Errorf("an unknown error is %+v, want nil (the caller's 500)", p)
	}
}

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	httperr.Write(rec, httperr.Of(fmt.Errorf("start: %w", runs.ErrTooManyRuns)))
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "1" || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, headers %v", rec.Code, rec.Header())
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != "too_many_runs" || body.Error.Message == "" {
		t.Errorf("body %s (%v)", rec.Body, err)
	}
}
