package openai

import (
	"errors"
	"net/http"
	"testing"
)

// FuzzParseRequest: any body is decoded or refused with a 400, never a
// panic; what is accepted has a message and well-formed tools.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"w","arguments":"{\"city\":\"Oslo\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"sunny"}],"tools":[{"type":"function","function":{"name":"w","parameters":{"type":"object"}}}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"required"}`,
		`{"model":"m","messages":[{"role":"wizard","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`,
		`{"model":"","messages":[]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a b"}}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"n":2}`,
		`[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := parseRequest(body)
		if err != nil {
			var e *apiError
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Type != "invalid_request_error" {
				t.Fatalf("error %v is not a 400 invalid_request_error", err)
			}
			return
		}
		if tr.model == "" || tr.input.Message == "" {
			t.Fatalf("accepted a request without a model or message: %+v", tr)
		}
		for _, ct := range tr.input.ClientTools {
			if !toolName.MatchString(ct.Name) {
				t.Fatalf("accepted the tool name %q", ct.Name)
			}
		}
	})
}
