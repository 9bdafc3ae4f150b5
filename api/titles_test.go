package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

// TestRenameConversation: PATCH /conversations/{id} with {"title"} sets
// the title the list and the conversation show, trimmed; a title that is
// missing, blank, too long or on several lines, another field, another
// user's conversation, are refused and change nothing. On SQLite and
// PostgreSQL.
func TestRenameConversation(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			status, body := e.do(http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "hello, what is 2+2?"})
			if status != http.StatusOK {
				t.Fatalf("chat: %d %s", status, body)
			}
			conv := jsonOf[struct {
				ConversationID string `json:"conversation_id"`
			}](t, body).ConversationID
			status, body = e.do(http.MethodPatch, "/api/v1/conversations/"+conv, map[string]any{"title": "  Sums ✓  "})
			got := jsonOf[store.Conversation](t, body)
			if status != http.StatusOK || got.ID != conv || got.Title != "Sums ✓" || got.Status != store.RunCompleted || got.CreatedAt.IsZero() {
				t.Fatalf("rename: %d %s", status, body)
			}
			_, body = e.do(http.MethodGet, "/api/v1/conversations", nil)
			list := jsonOf[struct{ Conversations []store.Conversation }](t, body)
			if len(list.Conversations) != 1 || list.Conversations[0].Title != "Sums ✓" {
				t.Errorf("listed: %+v", list.Conversations)
			}

			before := e.snapshot()
			for _, tc := range []struct {
				name   string
				body   any
				key    string
				path   string
				status int
				code   string
			}{
				{"no title", map[string]any{}, aliceKey, conv, 400, "invalid_field"},
				{"null title", `{"title": null}`, aliceKey, conv, 400, "invalid_field"},
				{"blank", map[string]any{"title": " \t "}, aliceKey, conv, 400, "invalid_field"},
				{"two lines", map[string]any{"title": "one\ntwo"}, aliceKey, conv, 400, "invalid_field"},
				{"too long", map[string]any{"title": strings.Repeat("é", 201)}, aliceKey, conv, 400, "invalid_field"},
				{"not a string", `{"title": 7}`, aliceKey, conv, 400, ""},
				{"unknown field", map[string]any{"title": "x", "pinned": true}, aliceKey, conv, 400, ""},
				{"bob's request", map[string]any{"title": "mine"}, bobKey, conv, 404, "not_found"},
				{"no such conversation", map[string]any{"title": "x"}, aliceKey, "nope", 404, "not_found"},
			} {
				status, body := e.doAs(tc.key, http.MethodPatch, "/api/v1/conversations/"+tc.path, tc.body)
				if status != tc.status || tc.code != "" && !strings.Contains(string(body), `"code":"`+tc.code+`"`) {
					t.Errorf("%s: %d %s, want %d %s", tc.name, status, body, tc.status, tc.code)
				}
			}
			if after := e.snapshot(); after != before {
				t.Errorf("a refused rename changed the store:\nbefore\n%s\nafter\n%s", before, after)
			}
			if status, body := e.do(http.MethodPatch, "/api/v1/conversations/"+conv, map[string]any{"title": strings.Repeat("é", 200)}); status != http.StatusOK {
				t.Errorf("a title of 200 characters: %d %s", status, body)
			}
		})
	}
}
