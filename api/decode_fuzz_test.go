package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/store"
)

// storable reports whether every string of v, a value json.Unmarshal
// made, keys included, is text the store keeps.
func storable(v any) bool {
	switch v := v.(type) {
	case string:
		return store.ValidText(v)
	case []any:
		for _, e := range v {
			if !storable(e) {
				return false
			}
		}
	case map[string]any:
		for k, e := range v {
			if !store.ValidText(k) || !storable(e) {
				return false
			}
		}
	}
	return true
}

// FuzzDecodeChat: what jsonbody.Decode accepts holds only text the store keeps;
// it refuses a chat body as invalid_text only when the body is not UTF-8
// or a string in it holds a NUL, as json.Unmarshal reads it; and it
// answers nothing but 400s.
func FuzzDecodeChat(f *testing.F) {
	for _, seed := range []string{
		`{"message": "hi"}`,
		`{"message": "hi\u0000"}`,
		"{\"message\": \"\xff\"}",
		"{\"message\": \"caf\xc3\"}",
		`{"message": "written \\u0000"}`,
		`{"message": "x", "context": {"a": [{"b": "\u0000"}]}}`,
		`{"message": "x", "context": {"\u0000": 1}}`,
		`{"message": "x", "document_ids": ["a", "\u0000"]}`,
		`{"message": "lone \ud800"}`,
		`{"message": "x"} {"message": "\u0000"}`,
		`{"mess\u0000age": "x"}`,
		`{"message": "x", "budget": {"max_tokens": 100, "max_tool_calls": 3, "max_seconds": 5.5}}`,
		`{"message": "x", "budget": {"max_tokens": -1, "extra": 2}}`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/chat", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		var req chatRequest
		err := jsonbody.Decode(r, &req)

		var v any
		oracle := utf8.Valid(body) && (json.Unmarshal(body, &v) != nil || storable(v))
		var e *Error
		switch {
		case err == nil:
			if !oracle {
				t.Fatalf("accepted %q, which holds text the store cannot keep", body)
			}
			var ctx any
			if req.Context != nil && json.Unmarshal(req.Context, &ctx) != nil {
				t.Fatalf("accepted %q with a context that is not JSON", body)
			}
			for _, s := range append([]string{req.Message, req.ConversationID, req.Model}, req.DocumentIDs...) {
				if !store.ValidText(s) || !storable(ctx) {
					t.Fatalf("accepted %q: %+v", body, req)
				}
			}
		case !errors.As(err, &e) || e.Status != http.StatusBadRequest:
			t.Fatalf("Decode(%q) = %v, want a 400", body, err)
		case e.Code == "invalid_text" && oracle:
			t.Fatalf("Decode(%q) = %v, but the body's text is storable", body, err)
		}
	})
}

// FuzzDecodeAnswers: the body of POST .../answers is refused with a 400
// or gives one valid answer per approval, each approval once.
func FuzzDecodeAnswers(f *testing.F) {
	for _, seed := range []string{
		`{"answers": [{"approval_id": "a", "decision": "approve"}, {"approval_id": "b", "decision": "reject", "reason": "no"}]}`,
		`{"answers": [{"approval_id": "a", "decision": "edit", "args": {"path": "/x"}}]}`,
		`{"answers": [{"approval_id": "a", "decision": "edit", "args": [1]}]}`,
		`{"answers": [{"approval_id": "a", "decision": "approve"}, {"approval_id": " a ", "decision": "approve"}]}`,
		`{"answers": [{"approval_id": "", "decision": "approve"}]}`,
		`{"answers": []}`,
		`{"answers": [{"approval_id": "a\u0000", "decision": "approve"}]}`,
		`{"answers": [{"approval_id": "a", "decision": "maybe"}]}`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/conversations/c/runs/r/answers", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		ids, answers, err := decodeAnswers(r)
		var e *Error
		if err != nil {
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
				t.Fatalf("decodeAnswers(%q) = %v, want a 400", body, err)
			}
			return
		}
		if len(ids) == 0 || len(ids) != len(answers) {
			t.Fatalf("decodeAnswers(%q) = %d ids, %d answers", body, len(ids), len(answers))
		}
		seen := map[string]bool{}
		for i, id := range ids {
			if id == "" || seen[id] || !store.ValidText(id) {
				t.Fatalf("decodeAnswers(%q): id %d %q empty, repeated or not storable", body, i, id)
			}
			seen[id] = true
			if err := answers[i].Validate(); err != nil {
				t.Fatalf("decodeAnswers(%q): answer %d invalid: %v", body, i, err)
			}
		}
	})
}
