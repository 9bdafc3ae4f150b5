package openai

import (
	"errors"
	"net/http"
	"testing"
)

// FuzzParseResponsesRequest: any body is decoded or refused with a 400
// (a malformed previous_response_id a 404), never a panic; what is
// accepted has a model and a message, or outputs of function calls to
// go on with a previous response.
func FuzzParseResponsesRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":"hi","instructions":"be brief","store":false,"stream":true}`,
		`{"model":"m","input":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"input_text","text":"a"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":"weather?"},{"type":"function_call","call_id":"c1","name":"w","arguments":"{\"city\":\"Oslo\"}"},{"type":"function_call_output","call_id":"c1","output":"sunny"}],"tools":[{"type":"function","name":"w","parameters":{"type":"object"}}]}`,
		`{"model":"m","previous_response_id":"resp_r1","input":[{"type":"function_call_output","call_id":"c1","output":"sunny"}]}`,
		`{"model":"m","previous_response_id":"resp_r1","input":[{"type":"function_call_output","call_id":"c1","output":"x"},{"role":"user","content":"hi"}]}`,
		`{"model":"m","previous_response_id":"r1","input":"hi"}`,
		`{"model":"m","input":"hi","tool_choice":"required"}`,
		`{"model":"m","input":[{"type":"mcp_approval_response","approve":true}]}`,
		`{"model":"m","input":[]}`, `{"model":"","input":"x"}`,
		`[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := parseResponsesRequest(body)
		if err != nil {
			var e *apiError
			if !errors.As(err, &e) || e.Type != "invalid_request_error" ||
				(e.Status != http.StatusBadRequest && (e.Status != http.StatusNotFound || *e.Param != "previous_response_id")) {
				t.Fatalf("error %v is not a 400 invalid_request_error", err)
			}
			return
		}
		if tr.model == "" {
			t.Fatalf("accepted a request without a model: %+v", tr)
		}
		if len(tr.outputs) > 0 {
			if tr.previous == "" || tr.input.Message != "" {
				t.Fatalf("accepted function outputs without a previous response, or with a message: %+v", tr)
			}
		} else if tr.input.Message == "" {
			t.Fatalf("accepted a request without a message: %+v", tr)
		}
		if !tr.store && (tr.previous != "" || !tr.input.NoMemory) {
			t.Fatalf("store: false kept something: %+v", tr)
		}
		for _, ct := range tr.input.ClientTools {
			if !toolName.MatchString(ct.Name) {
				t.Fatalf("accepted the tool name %q", ct.Name)
			}
		}
	})
}
