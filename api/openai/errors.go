package openai

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/trellis-ai/trellis/api/httperr"
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

// writeError answers err: an *apiError as it is, what httperr knows
// with its status and code under OpenAI's error types, anything else a
// 500 that says nothing of the cause (it is logged by the caller).
func writeError(w http.ResponseWriter, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "internal error"}
		if p := httperr.Of(err); p != nil {
			e = &apiError{Status: p.Status, Type: errorType(p.Status), Code: ptr(p.Code), Message: p.Message}
			p.Header(w.Header())
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]*apiError{"error": e})
}

// errorType is the OpenAI error type of an HTTP status.
func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}
