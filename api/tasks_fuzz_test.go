package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/nodes"
)

// FuzzDecodeTaskPatch: a PATCH body either becomes an edit the agent can
// apply as it is — at least one field, a known status, a position from 0
// — or a 4xx with API.md's error; never a panic, never a 5xx.
func FuzzDecodeTaskPatch(f *testing.F) {
	for _, s := range []string{
		`{"title":"a"}`, `{"status":"done"}`, `{"position":0}`, `{"title":"b","status":"in_progress","position":3}`,
		`{}`, `{"title":null}`, `{"status":"later"}`, `{"position":-1}`, `{"position":1e3}`, `{"position":1.5}`,
		`{"title":"\u0000"}`, `{"x":1}`, `[]`, `null`, `{"title":"a"} {}`, "\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPatch, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		e, err := decodeTaskPatch(r)
		if err != nil {
			var ae *Error
			if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 || ae.Code == "" {
				t.Fatalf("body %q: error %v is not a 4xx API error", body, err)
			}
			return
		}
		if !utf8.ValidString(body) {
			t.Fatalf("body %q is not UTF-8 but was accepted", body)
		}
		if e.Title == nil && e.Status == nil && e.Position == nil {
			t.Fatalf("body %q: an empty edit was accepted", body)
		}
		if e.Status != nil && !e.Status.Valid() || e.Position != nil && (*e.Position < 0 || *e.Position > nodes.MaxTasks) {
			t.Fatalf("body %q: edit %+v", body, e)
		}
	})
}
