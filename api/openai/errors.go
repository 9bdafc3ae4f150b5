package openai

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/trellis-ai/trellis/api/runs"
)

// apiError is an error answered in OpenAI's shape.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

// invalid is a 400 about one parameter of the request.
func invalid(param, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: msg, Param: ptr(param)}
}

func ptr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// writeError answers err: an *apiError as it is, the run service's
// refusals with their status, anything else a 500 that says nothing of
// the cause (it is logged by the caller).
func writeError(w http.ResponseWriter, err error) {
	var e *apiError
	switch {
	case errors.As(err, &e):
	case errors.Is(err, runs.ErrTooManyRuns):
		e = &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: ptr("too_many_runs"),
			Message: "too many runs going at once; wait for one to end"}
	case errors.Is(err, runs.ErrShuttingDown), errors.Is(err, runs.ErrUnavailable):
		e = &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: ptr("unavailable"),
			Message: "the service is unavailable for a moment; try again"}
	default:
		e = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "internal error"}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]*apiError{"error": e})
}
