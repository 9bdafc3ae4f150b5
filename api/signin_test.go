package api_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/api/signin"
	"github.com/trellis-ai/trellis/internal/oidctest"
	"github.com/trellis-ai/trellis/store"
)

// signInEnv is a server with keys and the page's sign-in through a real
// provider, served at base, the origin its redirect URL names.
type signInEnv struct {
	*env
	p    *oidctest.Provider
	base string
}

func newSignInEnv(t *testing.T, b backend, ttl time.Duration, configure func(*apitest.Config)) *signInEnv {
	t.Helper()
	p := oidctest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	e := newEnv(t, envOptions{backend: b, configure: func(c *apitest.Config) {
		si, err := signin.New(t.Context(), signin.Config{Issuer: p.Issuer(), ClientID: p.ClientID, ClientSecret: p.ClientSecret,
			RedirectURL: base + "/auth/callback", SessionTTL: ttl, Sessions: c.API.Store.(store.Sessions)})
		if err != nil {
			t.Fatal(err)
		}
		c.API.SignIn = si
		if configure != nil {
			configure(c)
		}
	}})
	hs := &http.Server{Handler: e.srv.Handler()}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return &signInEnv{env: e, p: p, base: base}
}

// browser is a client with a cookie jar that follows redirects until
// the page ("/"), as a browser signing in does.
func (s *signInEnv) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// noRedirects is a client with jar that follows no redirect.
func noRedirects(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (s *signInEnv) send(c *http.Client, method, path, body string, headers ...string) reply {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.t.Context(), method, s.base+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return send(s.t, c, req)
}

// signIn signs user in with c; it returns the session's CSRF token.
func (s *signInEnv) signIn(c *http.Client, user string) string {
	s.t.Helper()
	s.p.QueueUser(oidctest.User(user))
	if r := s.send(c, http.MethodGet, "/auth/login", ""); r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
		s.t.Fatalf("sign-in: %d %s %s", r.status, r.header.Get("Location"), r.body)
	}
	r := s.send(c, http.MethodGet, "/auth/session", "")
	if r.status != http.StatusOK {
		s.t.Fatalf("session after sign-in: %d %s", r.status, r.body)
	}
	sess := jsonOf[struct {
		User      string    `json:"user"`
		ExpiresAt time.Time `json:"expires_at"`
		CSRFToken string    `json:"csrf_token"`
	}](s.t, r.body)
	if sess.User != user || sess.CSRFToken == "" || !sess.ExpiresAt.After(time.Now()) {
		s.t.Fatalf("session %+v", sess)
	}
	return sess.CSRFToken
}

func (s *signInEnv) sessionCookie(c *http.Client) *http.Cookie {
	s.t.Helper()
	u, _ := url.Parse(s.base)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == middleware.SessionCookie {
			return ck
		}
	}
	return nil
}

func (s *signInEnv) conversations(c *http.Client) int {
	s.t.Helper()
	r := s.send(c, http.MethodGet, "/api/v1/conversations", "")
	if r.status != http.StatusOK {
		s.t.Fatalf("list: %d %s", r.status, r.body)
	}
	return len(jsonOf[struct{ Conversations []any }](s.t, r.body).Conversations)
}

func wantCode(t *testing.T, r reply, status int, code string) {
	t.Helper()
	wantError(t, r.status, r.body, status)
	if got := jsonOf[apiError](t, r.body).Error.Code; got != code {
		t.Errorf("code %q, want %q", got, code)
	}
}

// The page's sign-in, end to end against a real provider: the browser
// goes to the provider and back, holds an HttpOnly session cookie, reads
// who it is with the CSRF token, chats as that user with the token,
// and signs out, after which the old cookie is refused.
func TestSignInRoundTrip(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			s := newSignInEnv(t, b, 0, nil)
			b := s.browser()

			// Before signing in, /auth/session says so.
			wantCode(t, s.send(b, http.MethodGet, "/auth/session", ""), http.StatusUnauthorized, "unauthorized")

			s.p.QueueUser(oidctest.User("ada"))
			login := s.send(noRedirects(b.Jar), http.MethodGet, "/auth/login", "")
			to, err := url.Parse(login.header.Get("Location"))
			if login.status != http.StatusFound || err != nil || !strings.HasPrefix(to.String(), s.p.AuthorizationEndpoint()) {
				t.Fatalf("login: %d to %s", login.status, to)
			}
			q := to.Query()
			if q.Get("state") == "" || q.Get("nonce") == "" || q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" ||
				q.Get("client_id") != s.p.ClientID || q.Get("redirect_uri") != s.base+"/auth/callback" {
				t.Fatalf("authorize request %v", q)
			}
			// The rest of the way: the provider approves, the callback signs in.
			resp, err := b.Get(to.String())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			var set *http.Cookie
			for _, c := range resp.Cookies() {
				if c.Name == middleware.SessionCookie {
					set = c
				}
			}
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || set == nil {
				t.Fatalf("callback: %d to %q, cookie %v", resp.StatusCode, resp.Header.Get("Location"), set)
			}
			if !set.HttpOnly || set.SameSite != http.SameSiteLaxMode || set.Path != "/" || set.Secure || set.MaxAge <= 0 {
				t.Errorf("session cookie %+v", set)
			}
			sess := s.send(b, http.MethodGet, "/auth/session", "")
			var who struct {
				User      string `json:"user"`
				CSRFToken string `json:"csrf_token"`
			}
			if sess.status != http.StatusOK || json.Unmarshal(sess.body, &who) != nil || who.User != "ada" || who.CSRFToken == "" {
				t.Fatalf("session: %d %s", sess.status, sess.body)
			}
			chat := s.send(b, http.MethodPost, "/api/v1/chat/sync", `{"message":"hi"}`, middleware.CSRFHeader, who.CSRFToken)
			if chat.status != http.StatusOK || jsonOf[map[string]any](t, chat.body)["status"] != "completed" {
				t.Fatalf("chat signed in: %d %s", chat.status, chat.body)
			}
			if n := s.conversations(b); n != 1 {
				t.Fatalf("ada has %d conversations, want 1", n)
			}
			if status, _ := s.doAs(aliceKey, http.MethodGet, "/api/v1/conversations", nil); status != http.StatusOK {
				t.Fatalf("keys still work: %d", status)
			}

			old := s.sessionCookie(b)
			wantCode(t, s.send(b, http.MethodPost, "/auth/logout", ""), http.StatusForbidden, "csrf_failed")
			if out := s.send(b, http.MethodPost, "/auth/logout", "", middleware.CSRFHeader, who.CSRFToken); out.status != http.StatusNoContent {
				t.Fatalf("logout: %d %s", out.status, out.body)
			}
			if s.sessionCookie(b) != nil {
				t.Error("the cookie is still set after sign-out")
			}
			// The old cookie, sent again, signs no one in.
			stale := &http.Client{}
			for _, path := range []string{"/auth/session", "/api/v1/conversations"} {
				wantCode(t, s.send(stale, http.MethodGet, path, "", "Cookie", old.Name+"="+old.Value), http.StatusUnauthorized, "unauthorized")
			}
		})
	}
}

// A cookie-authenticated write needs the session's CSRF token: without
// it, or with another, it is 403 csrf_failed and changes nothing. Reads
// need none, and a bearer key's writes need none.
func TestSignInCSRF(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			s := newSignInEnv(t, b, 0, nil)
			b := s.browser()
			token := s.signIn(b, "ada")
			other := s.browser()
			otherToken := s.signIn(other, "bob")
			for name, headers := range map[string][]string{
				"no token":            nil,
				"another's token":     {middleware.CSRFHeader, otherToken},
				"the token, mangled":  {middleware.CSRFHeader, token[:len(token)-1]},
				"the cookie as token": {middleware.CSRFHeader, s.sessionCookie(b).Value},
			} {
				r := s.send(b, http.MethodPost, "/api/v1/chat/sync", `{"message":"hi"}`, headers...)
				if r.status != http.StatusForbidden || jsonOf[apiError](t, r.body).Error.Code != "csrf_failed" {
					t.Errorf("%s: %d %s", name, r.status, r.body)
				}
			}
			if n := s.conversations(b); n != 0 {
				t.Fatalf("refused writes made %d conversations", n)
			}
			if status, body := s.do(http.MethodPost, "/api/v1/chat/sync", map[string]string{"message": "hi"}); status != http.StatusOK {
				t.Fatalf("a bearer write without a token: %d %s", status, body)
			}
			if r := s.send(b, http.MethodPost, "/api/v1/chat/sync", `{"message":"hi"}`, middleware.CSRFHeader, token); r.status != http.StatusOK {
				t.Fatalf("with the token: %d %s", r.status, r.body)
			}
		})
	}
}

// A tampered session cookie and an expired session are refused; bad
// cookies count against the address as bad keys do, up to 429.
func TestSignInBadCookies(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			// The session lives ttl: long enough that a loaded machine still
			// holds its cookie when sign-in returns, short for the wait below.
			const ttl = 3 * time.Second
			s := newSignInEnv(t, b, ttl, func(c *apitest.Config) {
				c.API.Limits.AuthFailuresPerMinute, c.API.Limits.AuthFailureBurst = 1, 3
			})
			b := s.browser()
			s.signIn(b, "ada")
			signedIn := time.Now()
			good := s.sessionCookie(b)
			if good == nil {
				t.Fatal("no session cookie once sign-in returned")
			}
			plain := &http.Client{}
			bad := func(value string) reply {
				return s.send(plain, http.MethodGet, "/api/v1/conversations", "", "Cookie", middleware.SessionCookie+"="+value)
			}
			wantCode(t, bad(good.Value+"x"), http.StatusUnauthorized, "unauthorized")
			// The session was made before sign-in returned, so it has
			// expired ttl after that.
			time.Sleep(time.Until(signedIn.Add(ttl + 100*time.Millisecond)))
			wantCode(t, bad(good.Value), http.StatusUnauthorized, "unauthorized") // expired
			wantCode(t, s.send(plain, http.MethodGet, "/auth/session", "", "Cookie", middleware.SessionCookie+"=guess"), http.StatusUnauthorized, "unauthorized")
			wantCode(t, bad("another-guess"), http.StatusTooManyRequests, "rate_limited")
		})
	}
}
