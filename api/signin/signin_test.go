package signin_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/golang-jwt/jwt/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/api/signin"
	"github.com/trellis-ai/trellis/internal/oidctest"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
)

// env is the sign-in's endpoints under /auth, over a real provider and a
// real record of sessions, served at base, what its redirect URL names
// before /auth/callback: the server's origin, and the path prefix, when
// there is one, that the server is reached under, stripped on the way
// in as a reverse proxy does.
type env struct {
	t    *testing.T
	p    *oidctest.Provider
	base string
}

// backends are the records of sessions the tests run on.
var backends = []string{"sqlite", "postgres"}

// openSessions opens a fresh record of the backend.
func openSessions(t *testing.T, backend string) store.Sessions {
	t.Helper()
	if backend == "postgres" {
		st, err := pgstore.New(t.Context(), pgtest.New(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "trellis.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newEnv(t *testing.T, backend, prefix string) *env {
	t.Helper()
	st := openSessions(t, backend)
	p := oidctest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + prefix
	si, err := signin.New(t.Context(), signin.Config{Issuer: p.Issuer(), ClientID: p.ClientID, ClientSecret: p.ClientSecret,
		RedirectURL: base + "/auth/callback", Sessions: st})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	r := chi.NewRouter()
	r.Route("/auth", func(r chi.Router) {
		si.Routes(r, signin.Server{Refused: func(string) {}, Logger: log,
			Error: func(w http.ResponseWriter, r *http.Request, err error) { httperr.Reply(w, r, log, "sign-in", err) }})
	})
	hs := &http.Server{Handler: http.StripPrefix(prefix, r)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return &env{t: t, p: p, base: base}
}

func newJar() http.CookieJar {
	jar, _ := cookiejar.New(nil)
	return jar
}

// noRedirects is a client with jar that follows no redirect.
func noRedirects(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (e *env) get(c *http.Client, u string) reply {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), http.MethodGet, u, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

// begin starts a sign-in of user with jar up to the provider's answer:
// it returns the callback URL the provider sends the browser to.
func (e *env) begin(jar http.CookieJar, user string) string {
	e.t.Helper()
	e.p.QueueUser(oidctest.User(user))
	login := e.get(noRedirects(jar), e.base+"/auth/login")
	at := e.get(noRedirects(jar), login.header.Get("Location"))
	back := at.header.Get("Location")
	if at.status != http.StatusFound || !strings.HasPrefix(back, e.base+"/auth/callback?") {
		e.t.Fatalf("the provider answered %d to %q", at.status, back)
	}
	return back
}

// finish follows the callback URL with jar.
func (e *env) finish(jar http.CookieJar, callback string) reply {
	e.t.Helper()
	return e.get(noRedirects(jar), callback)
}

func (e *env) wantFailed(r reply, what string) {
	e.t.Helper()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	if r.status != http.StatusBadRequest || json.Unmarshal(r.body, &body) != nil || body.Error.Code != "signin_failed" {
		e.t.Errorf("%s: %d %s", what, r.status, r.body)
	}
	resp := http.Response{Header: r.header}
	for _, c := range resp.Cookies() {
		if c.Name == middleware.SessionCookie && c.Value != "" {
			e.t.Errorf("%s: a session cookie was set", what)
		}
	}
}

// A callback is refused, signing no one in, when its state is not the
// sign-in's, its code is replayed, its sign-in cookie is tampered with
// or missing, or the provider's ID token has another nonce, has
// expired, names another audience or is not the provider's.
func TestSignInRefused(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			s := newEnv(t, b, "")

			jar := newJar()
			back := s.begin(jar, "ada")
			u, _ := url.Parse(back)
			q := u.Query()
			q.Set("state", "forged")
			u.RawQuery = q.Encode()
			s.wantFailed(s.finish(jar, u.String()), "wrong state")

			jar = newJar()
			back = s.begin(jar, "ada")
			base, _ := url.Parse(s.base + "/auth/callback")
			flow := jar.Cookies(base)
			if r := s.finish(jar, back); r.status != http.StatusSeeOther {
				t.Fatalf("the first use of a code: %d %s", r.status, r.body)
			}
			replay := newJar()
			replay.SetCookies(base, flow)
			s.wantFailed(s.finish(replay, back), "a replayed code")
			s.wantFailed(s.finish(jar, back), "the callback again, its sign-in cookie spent")

			jar = newJar()
			back = s.begin(jar, "ada")
			tampered := jar.Cookies(base)
			for _, c := range tampered {
				c.Value = strings.Replace(c.Value, ".", ".A", 1)
			}
			forged := newJar()
			forged.SetCookies(base, tampered)
			s.wantFailed(s.finish(forged, back), "a tampered sign-in cookie")
			s.wantFailed(s.finish(newJar(), back), "no sign-in cookie")

			stranger := oidctest.Start(t)
			for name, change := range map[string]func(jwt.MapClaims){
				"another nonce":    func(c jwt.MapClaims) { c["nonce"] = "not-the-sign-ins" },
				"expired":          func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Minute).Unix() },
				"another audience": func(c jwt.MapClaims) { c["aud"] = "another-service" },
				"another issuer":   func(c jwt.MapClaims) { c["iss"] = stranger.Issuer() },
				"no user":          func(c jwt.MapClaims) { c["sub"] = "" },
				"long user":        func(c jwt.MapClaims) { c["sub"] = strings.Repeat("u", store.MaxIDBytes+1) },
			} {
				s.p.RewriteIDTokens(change)
				jar := newJar()
				s.wantFailed(s.finish(jar, s.begin(jar, "ada")), name)
			}
			// A key rotated at the provider needs no restart: an ID token of
			// the new key is taken.
			s.p.Rotate(t)
			s.p.RewriteIDTokens(func(jwt.MapClaims) {})
			jar = newJar()
			if r := s.finish(jar, s.begin(jar, "ada")); r.status != http.StatusSeeOther {
				t.Fatalf("after a key rotation: %d %s", r.status, r.body)
			}
		})
	}
}

// Under a path prefix that a reverse proxy strips, the sign-in works as
// the browser sees it: its cookies are the prefix's (the flow cookie
// reaches the callback; the session cookie goes to this service and not
// to the host's others) and it sends the browser back to the page at
// the prefix.
func TestSignInUnderPrefix(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			s := newEnv(t, b, "/tools/trellis")
			jar := newJar()
			r := s.finish(jar, s.begin(jar, "ada"))
			if r.status != http.StatusSeeOther || r.header.Get("Location") != "/tools/trellis/" {
				t.Fatalf("callback: %d to %q %s", r.status, r.header.Get("Location"), r.body)
			}
			paths := map[string]string{}
			for _, c := range (&http.Response{Header: r.header}).Cookies() {
				paths[c.Name] = c.Path
			}
			if paths[middleware.SessionCookie] != "/tools/trellis/" || paths["trellis_signin"] != "/tools/trellis/auth/" {
				t.Errorf("cookie paths %v", paths)
			}
			if out := s.get(noRedirects(newJar()), s.base+"/auth/session"); out.status != http.StatusUnauthorized ||
				!strings.Contains(string(out.body), "sign in at /tools/trellis/auth/login") {
				t.Errorf("no session: %d %s", out.status, out.body)
			}
			sess := s.get(noRedirects(jar), s.base+"/auth/session")
			if sess.status != http.StatusOK || !strings.Contains(string(sess.body), `"user":"ada"`) {
				t.Fatalf("session: %d %s", sess.status, sess.body)
			}
			other, _ := url.Parse(strings.TrimSuffix(s.base, "/tools/trellis") + "/another-app/")
			for _, c := range jar.Cookies(other) {
				t.Errorf("the host's other paths get cookie %s", c.Name)
			}
		})
	}
}

func TestPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"https://chat.example.com/auth/callback":      "",
		"https://example.com/trellis/auth/callback":   "/trellis",
		"http://127.0.0.1:8080/a/b/auth/callback?x=1": "/a/b",
		"https://example.com/caf%C3%A9/auth/callback": "/caf%C3%A9",
	} {
		if got, err := signin.Prefix(in); err != nil || got != want {
			t.Errorf("Prefix(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"https://example.com/callback",
		"https://example.com/auth/callback/",
		"https://example.com/trellis//auth/callback",
		"https://example.com//auth/callback",
		"https://example.com/a/../auth/callback",
		"https://example.com/./auth/callback",
		"https://example.com/a;b/auth/callback",
		"https://example.com/trellisauth/callback",
	} {
		if got, err := signin.Prefix(in); !errors.Is(err, signin.ErrRedirectPath) {
			t.Errorf("Prefix(%q) = %q, %v; want ErrRedirectPath", in, got, err)
		}
	}
}
