package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestMessageLimitEverySurface: the server's one message limit (its
// default, 32,000 characters) refuses an 80,000-character message on
// every surface that takes one, with 400 message_too_long in that
// surface's error shape, and nothing is stored.
func TestMessageLimitEverySurface(t *testing.T) {
	e := newEnv(t, envOptions{})
	status, body := e.do(http.MethodPost, "/langgraph/threads", map[string]any{})
	if status != http.StatusOK {
		t.Fatalf("create thread: %d %s", status, body)
	}
	thread := jsonOf[struct {
		ThreadID string `json:"thread_id"`
	}](t, body).ThreadID
	long := strings.Repeat("a", 80_000)
	cases := []struct {
		name, path string
		body       any
	}{
		{"chat", "/api/v1/chat", map[string]any{"message": long}},
		{"chat/sync", "/api/v1/chat/sync", map[string]any{"message": long}},
		{"openai", "/v1/chat/completions", map[string]any{"model": "scripted",
			"messages": []map[string]any{{"role": "user", "content": long}}}},
		{"openai streamed", "/v1/chat/completions", map[string]any{"model": "scripted", "stream": true,
			"messages": []map[string]any{{"role": "user", "content": long}}}},
		{"openai responses", "/v1/responses", map[string]any{"model": "scripted", "input": long}},
		{"openai responses streamed", "/v1/responses", map[string]any{"model": "scripted", "stream": true,
			"input": []map[string]any{{"role": "user", "content": []map[string]any{{"type": "input_text", "text": long}}}}}},
		{"ag-ui", "/ag-ui", aguiInput("long-thread", long)},
		{"ai-sdk", "/api/ai-sdk/chat", aisdkInput("long-chat", long)},
		{"langgraph stream", "/langgraph/threads/" + thread + "/runs/stream", map[string]any{"assistant_id": "agent",
			"input": map[string]any{"messages": []map[string]any{{"type": "human", "content": long}}}}},
		{"langgraph wait", "/langgraph/threads/" + thread + "/runs/wait", map[string]any{"assistant_id": "agent",
			"input": map[string]any{"messages": []map[string]any{{"type": "human", "content": long}}}}},
	}
	before := e.snapshot()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.do(http.MethodPost, tc.path, tc.body)
			if status != http.StatusBadRequest {
				t.Fatalf("%d %.300s, want 400", status, body)
			}
			var got struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("the body is not an error object: %v: %.300s", err, body)
			}
			if got.Error.Code != "message_too_long" || !strings.Contains(got.Error.Message, "32000 characters") {
				t.Errorf("error %+v, want message_too_long naming the limit", got.Error)
			}
			if after := e.snapshot(); after != before {
				t.Errorf("the store changed:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}
}

// TestContextLimit: a chat's context object over 16 KiB as compact JSON
// is refused with 400 context_too_large on the native chat, the sync chat
// the OpenAI adapters (whose system messages and instructions are their
// context), AG-UI
// (its context list) and LangGraph's runs (their context), on
// SQLite and PostgreSQL, and nothing is stored; one at the limit, however
// it is spaced, is taken.
func TestContextLimit(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			status, body := e.do(http.MethodPost, "/langgraph/threads", map[string]any{})
			if status != http.StatusOK {
				t.Fatalf("create thread: %d %s", status, body)
			}
			thread := jsonOf[struct {
				ThreadID string `json:"thread_id"`
			}](t, body).ThreadID
			big := map[string]any{"page": strings.Repeat("x", 16<<10)}
			agui := aguiInput("big-thread", "hi")
			agui["context"] = []map[string]any{{"description": "the page", "value": strings.Repeat("x", 16<<10)}}
			cases := []struct {
				name, path string
				body       any
			}{
				{"chat", "/api/v1/chat", map[string]any{"message": "hi", "context": big}},
				{"chat/sync", "/api/v1/chat/sync", map[string]any{"message": "hi", "context": big}},
				{"openai", "/v1/chat/completions", map[string]any{"model": "scripted", "messages": []map[string]any{
					{"role": "system", "content": strings.Repeat("y", 16<<10)}, {"role": "user", "content": "hi"}}}},
				{"openai responses", "/v1/responses", map[string]any{"model": "scripted", "input": "hi", "instructions": strings.Repeat("y", 16<<10)}},
				{"ag-ui", "/ag-ui", agui},
				{"langgraph wait", "/langgraph/threads/" + thread + "/runs/wait", map[string]any{"assistant_id": "agent", "context": big,
					"input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "hi"}}}}},
			}
			before := e.snapshot()
			for _, tc := range cases {
				status, body := e.do(http.MethodPost, tc.path, tc.body)
				if status != http.StatusBadRequest {
					t.Fatalf("%s: %d %.300s, want 400", tc.name, status, body)
				}
				var got struct {
					Error struct{ Code, Message string }
				}
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatalf("%s: the body is not an error object: %v: %.300s", tc.name, err, body)
				}
				if got.Error.Code != "context_too_large" || !strings.Contains(got.Error.Message, "16384 bytes") {
					t.Errorf("%s: error %+v, want context_too_large naming the limit", tc.name, got.Error)
				}
				if after := e.snapshot(); after != before {
					t.Errorf("%s: the store changed:\nbefore\n%s\nafter\n%s", tc.name, before, after)
				}
			}
			// Spaces between tokens do not count: the limit is of the
			// compact object, which is what the agent gets.
			fits := `{"page":   "` + strings.Repeat("x", 16<<10-11) + `"   }`
			status, body = e.do(http.MethodPost, "/api/v1/chat/sync", `{"message": "hi", "context": `+fits+`}`)
			if status != http.StatusOK {
				t.Fatalf("a context at the limit: %d %.300s", status, body)
			}
		})
	}
}
