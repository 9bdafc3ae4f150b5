package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/trellis-ai/trellis/internal/oidctest"
)

// serve with an OpenID Connect issuer takes its tokens beside keys: each
// names its user, whose conversations are their own; no token, or an
// expired one, is 401.
func TestServeOIDCTokens(t *testing.T) {
	t.Parallel()
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

// serve with --oidc-redirect-url signs a browser in through the
// provider: the session cookie it sets chats as the provider's user,
// with the session's CSRF token, and after sign-out it is refused.
func TestServeSignIn(t *testing.T) {
	t.Parallel()
	c, m, _ := startSignIn(t, "")
	b := newBrowser(t)
	send := func(method, path, body string, headers ...string) (int, []byte) {
		return b.send(method, c.url, path, body, headers...)
	}
	m.QueueUser(oidctest.User("ada"))
	if status, body := send(http.MethodGet, "/auth/login", ""); status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", status, body)
	}
	status, body := send(http.MethodGet, "/auth/session", "")
	var sess struct {
		User      string `json:"user"`
		CSRFToken string `json:"csrf_token"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &sess) != nil || sess.User != "ada" {
		t.Fatalf("session: %d %s", status, body)
	}
	if status, body := send(http.MethodPost, "/api/v1/chat/sync", `{"message":"hi"}`, "Content-Type", "application/json"); status != http.StatusForbidden {
		t.Fatalf("a write without the CSRF token: %d %s", status, body)
	}
	if status, body := send(http.MethodPost, "/api/v1/chat/sync", `{"message":"hi"}`, "Content-Type", "application/json", "X-CSRF-Token", sess.CSRFToken); status != http.StatusOK {
		t.Fatalf("chat signed in: %d %s", status, body)
	}
	if r := c.do(http.MethodGet, "/api/v1/conversations", nil, "Authorization", "Bearer "+m.Token(t, "ada", nil)); r.StatusCode != http.StatusOK {
		t.Fatalf("ada's token: %d", r.StatusCode)
	} else {
		var list struct{ Conversations []any }
		if json.NewDecoder(r.Body).Decode(&list) != nil || len(list.Conversations) != 1 {
			t.Fatalf("ada's conversations by her token: %v; want the one of her session", list.Conversations)
		}
	}
	if status, body := send(http.MethodPost, "/auth/logout", "", "X-CSRF-Token", sess.CSRFToken); status != http.StatusNoContent {
		t.Fatalf("sign-out: %d %s", status, body)
	}
	if status, _ := send(http.MethodGet, "/api/v1/conversations", ""); status != http.StatusUnauthorized {
		t.Fatalf("after sign-out: %d", status)
	}
}

// startSignIn starts serve with the page's sign-in through a provider
// it starts too, and returns the server's public URL. With a prefix,
// the server is reached through a reverse proxy that serves it under
// the prefix, stripping it (http.StripPrefix over httputil's proxy), and
// the redirect URL and the public URL name the proxy's origin and the
// prefix; without one, the redirect URL names the server's own address.
func startSignIn(t *testing.T, prefix string) (*child, *oidctest.Provider, string) {
	t.Helper()
	m := oidctest.Start(t)
	addr := freeAddr(t)
	public := "http://" + addr
	var proxy net.Listener
	if prefix != "" {
		var err error
		if proxy, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		public = "http://" + proxy.Addr().String() + prefix
	}
	c := startServe(t, append(signInVars(m, public), childArgs+"=serve --addr "+addr, "TRELLIS_DATA_DIR="+t.TempDir())...)
	if proxy != nil {
		target, _ := url.Parse(c.url)
		mux := http.NewServeMux()
		mux.Handle(prefix+"/", http.StripPrefix(prefix, httputil.NewSingleHostReverseProxy(target)))
		hs := &http.Server{Handler: mux}
		go hs.Serve(proxy)
		t.Cleanup(func() { hs.Close() })
	}
	return c, m, public
}

// signInVars configure serve's sign-in through m, with the redirect URL
// public + /auth/callback.
func signInVars(m *oidctest.Provider, public string) []string {
	return []string{"TRELLIS_OIDC_ISSUER=" + m.Issuer(), "TRELLIS_OIDC_AUDIENCE=" + m.ClientID,
		"TRELLIS_OIDC_CLIENT_SECRET=" + m.ClientSecret, "TRELLIS_OIDC_REDIRECT_URL=" + public + "/auth/callback"}
}

// freeAddr returns a loopback address no one listens on, for a server
// whose address must be known before it starts (a redirect URL names it).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
