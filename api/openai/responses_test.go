package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/store"
)

const bobKey = "key-bob"

// withBob adds a second user, bob.
func withBob(c *apitest.Config) {
	c.API.Keys = map[middleware.APIKey]string{aliceKey: "alice", bobKey: "bob"}
}

type responseObject struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Status             string  `json:"status"`
	PreviousResponseID *string `json:"previous_response_id"`
	Store              bool    `json:"store"`
	Output             []struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"output"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   string `json:"param"`
		Code    string `json:"code"`
	} `json:"error"`
}

// text is the response's output text, its messages' joined.
func (r responseObject) text() string {
	var b strings.Builder
	for _, it := range r.Output {
		if it.Type == "message" {
			for _, c := range it.Content {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

// post sends a Responses request as key's user and decodes the answer,
// whatever its status.
func (s *server) post(t *testing.T, key, body string) (int, responseObject, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/v1/responses", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r responseObject
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%d: %v: %s", resp.StatusCode, err, raw)
	}
	return resp.StatusCode, r, resp.Header
}

// A response continued with previous_response_id is the next turn of
// the same conversation; another user's response id is not found, and
// changes nothing.
func TestResponsesContinueTheConversation(t *testing.T) {
	s := newServer(t, withBob)
	code, first, h := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello there", "instructions": "Be brief."}`)
	if code != http.StatusOK || first.Object != "response" || !strings.HasPrefix(first.ID, "resp_") || first.Status != "completed" ||
		first.text() != "Hello from Trellis." || !sums(first.Usage.InputTokens, first.Usage.OutputTokens, first.Usage.TotalTokens) {
		t.Fatalf("first: %d %+v", code, first)
	}
	conv := h.Get("X-Trellis-Conversation-Id")

	code, second, h := s.post(t, aliceKey, `{"model": "trellis-test", "input": [{"role": "user", "content": [{"type": "input_text", "text": "what is 2+2?"}]}], "previous_response_id": "`+first.ID+`"}`)
	if code != http.StatusOK || second.text() != "2+2 is 4." || second.PreviousResponseID == nil || *second.PreviousResponseID != first.ID {
		t.Fatalf("second: %d %+v", code, second)
	}
	if got := h.Get("X-Trellis-Conversation-Id"); got != conv {
		t.Errorf("the second response is in conversation %s, not %s", got, conv)
	}
	// Trellis' calculator ran inside the response: no item shows it.
	for _, it := range second.Output {
		if it.Type != "message" {
			t.Errorf("second: an output item of type %s", it.Type)
		}
	}
	page, err := s.store.ListRuns(t.Context(), "alice", conv, store.RunQuery{})
	if err != nil || len(page.Runs) != 2 {
		t.Fatalf("the conversation's runs: %+v, %v", page.Runs, err)
	}

	// An older response of the conversation is refused: Trellis goes on
	// from the end.
	if code, r, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello there", "previous_response_id": "`+first.ID+`"}`); code != http.StatusBadRequest ||
		r.Error.Param != "previous_response_id" {
		t.Errorf("an older previous response: %d %+v", code, r.Error)
	}
	for _, id := range []string{second.ID, "resp_nope", "nope"} {
		code, r, _ := s.post(t, bobKey, `{"model": "trellis-test", "input": "hello there", "previous_response_id": "`+id+`"}`)
		if code != http.StatusNotFound || r.Error.Code != "previous_response_not_found" || r.Error.Param != "previous_response_id" {
			t.Errorf("bob continuing %s: %d %+v", id, code, r.Error)
		}
	}
	if page, err := s.store.ListRuns(t.Context(), "alice", conv, store.RunQuery{}); err != nil || len(page.Runs) != 2 {
		t.Errorf("after the refusals, the conversation's runs: %+v, %v", page.Runs, err)
	}
}

// store: false keeps nothing: the conversation is gone once the
// response is answered, and its id is not found.
func TestResponsesStoreFalse(t *testing.T) {
	s := newServer(t)
	code, r, h := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello there", "store": false}`)
	if code != http.StatusOK || r.text() != "Hello from Trellis." || r.Store {
		t.Fatalf("%d %+v", code, r)
	}
	if _, err := s.store.GetConversation(t.Context(), "alice", h.Get("X-Trellis-Conversation-Id")); err == nil {
		t.Error("the conversation of a response made with store: false is kept")
	}
	if code, r, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello there", "previous_response_id": "`+r.ID+`"}`); code != http.StatusNotFound {
		t.Errorf("continuing it: %d %+v", code, r.Error)
	}
	if code, r, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello", "store": false, "previous_response_id": "resp_x"}`); code != http.StatusBadRequest ||
		r.Error.Param != "store" {
		t.Errorf("store: false with previous_response_id: %d %+v", code, r.Error)
	}
}

// Client mistakes are 400s in OpenAI's shape, naming the parameter, and
// start nothing; the server's message limit holds here too.
func TestResponsesClientMistakes(t *testing.T) {
	s := newServer(t, func(c *apitest.Config) { c.Runs.MaxMessageRunes = 20 })
	for _, tc := range []struct{ body, param string }{
		{`{"model": "trellis-test"}`, "input"},
		{`{"model": "trellis-test", "input": []}`, "input"},
		{`{"input": "hi"}`, "model"},
		{`{"model": "trellis-test", "input": [{"role": "assistant", "content": "hi"}]}`, "input"},
		{`{"model": "trellis-test", "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "http://x/y.png"}]}]}`, "input[0].content"},
		{`{"model": "trellis-test", "input": [{"type": "web_search_call"}]}`, "input[0].type"},
		{`{"model": "trellis-test", "input": [{"type": "mcp_approval_response", "approval_request_id": "a", "approve": true}]}`, "input[0].type"},
		{`{"model": "trellis-test", "input": "hi", "tools": [{"type": "function", "name": "a b"}]}`, "tools[0].name"},
		{`{"model": "trellis-test", "input": "hi", "tools": [{"type": "web_search"}]}`, "tools[0].type"},
		{`{"model": "trellis-test", "input": "hi", "tool_choice": "required"}`, "tool_choice"},
		{`{"model": "trellis-test", "input": "hi", "background": true}`, "background"},
		{`{"model": "trellis-test", "input": "hi", "conversation": "conv_1"}`, "conversation"},
		{`{"model": "trellis-test", "input": [{"type": "function_call_output", "output": "x"}]}`, "input[0].call_id"},
		{`{"model": "trellis-test", "input": "` + strings.Repeat("x", 21) + `"}`, ""},
	} {
		code, r, _ := s.post(t, aliceKey, tc.body)
		if code != http.StatusBadRequest || r.Error.Type != "invalid_request_error" || r.Error.Param != tc.param || r.Error.Message == "" {
			t.Errorf("%s: %d %+v", tc.body, code, r.Error)
		}
	}
	if code, r, _ := s.post(t, aliceKey, `{"model": "no-such-model", "input": "hi"}`); code != http.StatusNotFound || r.Error.Code != "model_not_found" {
		t.Errorf("unknown model: %d %+v", code, r.Error)
	}
	page, err := s.store.ListConversations(t.Context(), "alice", store.Page{})
	if err != nil || len(page.Conversations) != 0 {
		t.Errorf("refused requests made conversations: %+v, %v", page.Conversations, err)
	}
}
