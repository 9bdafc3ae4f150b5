package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/trellis-ai/trellis/internal/oidctest"
)

// serve with an OpenID Connect issuer takes its tokens beside keys: each
// names its user, whose conversations are their own; no token, or an
// expired one, is 401.
func TestServeOIDCTokens(t *testing.T) {
	m := oidctest.Start(t)
	token := func(user string, ttl time.Duration) []string {
		tok := m.Token(t, user, jwt.MapClaims{"exp": time.Now().Add(ttl).Unix()})
		return []string{"Authorization", "Bearer " + tok}
	}
	c := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir(), "TRELLIS_OIDC_ISSUER="+m.Issuer(), "TRELLIS_OIDC_AUDIENCE="+m.ClientID)

	resp := c.do(http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "hi"}, token("ada", time.Minute)...)
	var out map[string]any
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil || out["status"] != "completed" {
		t.Fatalf("chat with a token: %d %v", resp.StatusCode, out)
	}
	count := func(auth []string) int {
		var list struct{ Conversations []any }
		r := c.do(http.MethodGet, "/api/v1/conversations", nil, auth...)
		if r.StatusCode != http.StatusOK || json.NewDecoder(r.Body).Decode(&list) != nil {
			t.Fatalf("list: %d", r.StatusCode)
		}
		return len(list.Conversations)
	}
	if ada, bob := count(token("ada", time.Minute)), count(token("bob", time.Minute)); ada != 1 || bob != 0 {
		t.Fatalf("conversations: ada %d, bob %d; want 1 and 0", ada, bob)
	}
	for name, auth := range map[string][]string{"no token": nil, "expired": token("ada", -time.Minute)} {
		if r := c.do(http.MethodGet, "/api/v1/conversations", nil, auth...); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d", name, r.StatusCode)
		}
	}
}
