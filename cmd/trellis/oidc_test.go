package main

import (
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"
)

// serve with an OpenID Connect issuer takes its tokens beside keys: each
// names its user, whose conversations are their own; no token, or an
// expired one, is 401.
func TestServeOIDCTokens(t *testing.T) {
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Keypair.KeyID(); err != nil { // computed once, before the provider's handlers read it
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	token := func(user string, ttl time.Duration) []string {
		tok, err := m.Keypair.SignJWT(jwt.MapClaims{"iss": m.Issuer(), "aud": m.ClientID, "sub": user, "exp": time.Now().Add(ttl).Unix()})
		if err != nil {
			t.Fatal(err)
		}
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
