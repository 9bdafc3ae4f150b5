package jsonbody_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
)

// Each body Decode refuses is refused with the status and code API.md
// gives it.
func TestDecodeRefusals(t *testing.T) {
	type body struct {
		Message string   `json:"message"`
		IDs     []string `json:"ids"`
	}
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		code                    string
	}{
		{"not JSON", "text/plain", `{"message": "hi"}`, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"empty", "application/json", ``, http.StatusBadRequest, "malformed_json"},
		{"syntax", "application/json", `{"message": }`, http.StatusBadRequest, "malformed_json"},
		{"two values", "application/json", `{"message": "a"} {}`, http.StatusBadRequest, "malformed_json"},
		{"not an object", "application/json", `[1]`, http.StatusBadRequest, "malformed_json"},
		{"unknown field", "application/json", `{"mesage": "hi"}`, http.StatusBadRequest, "unknown_field"},
		{"wrong type", "application/json", `{"ids": "a"}`, http.StatusBadRequest, "invalid_field"},
		{"not UTF-8", "application/json", "{\"message\": \"\xff\"}", http.StatusBadRequest, "invalid_text"},
		{"NUL", "application/json", `{"ids": ["\u0000"]}`, http.StatusBadRequest, "invalid_text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", tc.contentType)
			var p *httperr.Problem
			if err := jsonbody.Decode(r, &body{}); !errors.As(err, &p) || p.Status != tc.status || p.Code != tc.code {
				t.Errorf("Decode = %v, want %d %s", err, tc.status, tc.code)
			}
		})
	}
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"message": "hi", "ids": ["a"]}`))
	r.Header.Set("Content-Type", "application/json; charset=utf-8")
	var b body
	if err := jsonbody.Decode(r, &b); err != nil || b.Message != "hi" || len(b.IDs) != 1 {
		t.Errorf("Decode = %v, %+v", err, b)
	}
}
