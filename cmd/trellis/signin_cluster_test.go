package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/internal/oidctest"
)

// browser is a client signing in as a browser does: it keeps cookies and
// follows redirects until the page ("/").
type browser struct {
	t   *testing.T
	jar *cookiejar.Jar
	c   *http.Client
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, jar: jar, c: &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/" {
			return http.ErrUseLastResponse
		}
		return nil
	}}}
}

// send sends a request to origin with the browser's cookies.
func (b *browser) send(method, origin, path, body string, headers ...string) (int, []byte) {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), method, origin+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// signIn signs user in through the provider at origin's /auth/login,
// and returns once the callback answered: the session cookie is in the
// jar (cookies name a host, not a port, so every process on 127.0.0.1
// gets it).
func (b *browser) signIn(m *oidctest.Provider, origin, user string) {
	b.t.Helper()
	m.QueueUser(oidctest.User(user))
	if status, body := b.send(http.MethodGet, origin, "/auth/login", ""); status != http.StatusSeeOther {
		b.t.Fatalf("sign-in of %s: %d %s", user, status, body)
	}
}

// session is GET /auth/session at origin: the user and the CSRF token,
// or the status when it is not 200.
func (b *browser) session(origin string) (status int, user, csrf string) {
	b.t.Helper()
	status, body := b.send(http.MethodGet, origin, "/auth/session", "")
	var s struct {
		User      string `json:"user"`
		CSRFToken string `json:"csrf_token"`
	}
	if status == http.StatusOK && json.Unmarshal(body, &s) != nil {
		b.t.Fatalf("session: %s", body)
	}
	return status, s.User, s.CSRFToken
}

// cookie is the session cookie's value, sent by hand after the jar has
// dropped it (a sign-out clears it): what a copied cookie would replay.
func (b *browser) cookie(origin string) string {
	b.t.Helper()
	status, body := b.send(http.MethodGet, origin, "/auth/session", "")
	if status != http.StatusOK {
		b.t.Fatalf("session: %d %s", status, body)
	}
	req, _ := http.NewRequest(http.MethodGet, origin, nil)
	for _, c := range b.jar.Cookies(req.URL) {
		if c.Name == middleware.SessionCookie {
			return c.Value
		}
	}
	b.t.Fatal("no session cookie")
	return ""
}

// statusWith is a GET of path at c with the session cookie value and
// nothing else.
func statusWith(c *child, path, cookie string) int {
	c.t.Helper()
	resp := c.do(http.MethodGet, path, nil, "Cookie", middleware.SessionCookie+"="+cookie)
	resp.Body.Close()
	return resp.StatusCode
}

// A session is a row of the shared record, so it holds on every process
// of a cluster at once: signed in through process A, the cookie works on
// B; signed out on A, B refuses it the next moment (no process keeps a
// session it was told of), and so does A; a user erased through A is
// signed out on B too, once the erasure has run.
func TestSessionsAcrossProcesses(t *testing.T) {
	t.Parallel()
	m := oidctest.Start(t)
	addr := freeAddr(t)
	origin := "http://" + addr
	env := append(signInVars(m, origin), "DATABASE_URL="+pgDSN(t), "TRELLIS_CLAIM_INTERVAL=100ms")
	a := startServe(t, append(slices.Clone(env), childArgs+"=serve --addr "+addr)...)
	b := startServe(t, env...)

	ada := newBrowser(t)
	ada.signIn(m, a.url, "ada")
	status, user, csrf := ada.session(b.url)
	if status != http.StatusOK || user != "ada" {
		t.Fatalf("ada's session on B: %d %q", status, user)
	}
	if status, body := ada.send(http.MethodGet, b.url, "/api/v1/conversations", ""); status != http.StatusOK {
		t.Fatalf("ada's cookie on B: %d %s", status, body)
	}
	cookie := ada.cookie(a.url)
	if status, body := ada.send(http.MethodPost, a.url, "/auth/logout", "", middleware.CSRFHeader, csrf); status != http.StatusNoContent {
		t.Fatalf("sign-out on A: %d %s", status, body)
	}
	for _, c := range []*child{b, a} {
		for _, path := range []string{"/api/v1/conversations", "/auth/session"} {
			if got := statusWith(c, path, cookie); got != http.StatusUnauthorized {
				t.Errorf("the signed-out cookie on %s %s: %d, want 401", c.url, path, got)
			}
		}
	}

	bob := newBrowser(t)
	bob.signIn(m, a.url, "bob")
	_, _, csrf = bob.session(b.url)
	cookie = bob.cookie(b.url)
	if status, body := bob.send(http.MethodDelete, a.url, "/api/v1/me", "", middleware.CSRFHeader, csrf); status != http.StatusAccepted {
		t.Fatalf("erasure on A: %d %s", status, body)
	}
	waitFor(t, "B refusing the erased user's cookie", func() bool {
		return statusWith(b, "/api/v1/conversations", cookie) == http.StatusUnauthorized
	})
	if got := statusWith(a, "/auth/session", cookie); got != http.StatusUnauthorized {
		t.Errorf("the erased user's cookie on A: %d, want 401", got)
	}
}

// A session is stored before its cookie is handed out: a process killed
// (SIGKILL) the moment its callback answered leaves a session that the
// next process, on the same database, accepts; on SQLite and
// PostgreSQL.
func TestCrashRightAfterSignIn(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			m := oidctest.Start(t)
			addr := freeAddr(t)
			origin := "http://" + addr
			e.env = append(e.env, signInVars(m, origin)...)
			first := startServe(t, append(slices.Clone(e.env), childArgs+"=serve --addr "+addr)...)
			ada := newBrowser(t)
			ada.signIn(m, first.url, "ada")
			first.stop(syscall.SIGKILL)

			next := e.start()
			status, user, _ := ada.session(next.url)
			if status != http.StatusOK || user != "ada" {
				t.Fatalf("the session after the crash: %d %q\n%s", status, user, next.logs.String())
			}
			if status, body := ada.send(http.MethodGet, next.url, "/api/v1/conversations", ""); status != http.StatusOK || !strings.Contains(string(body), "conversations") {
				t.Fatalf("the cookie after the crash: %d %s", status, body)
			}
		})
	}
}
