package api_test

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api"
	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/mcp"
)

// from returns a client whose connections leave from the local address
// ip (any of 127.0.0.0/8), so that a test speaks as several client
// addresses to one server.
func (e *env) from(ip string) *http.Client {
	e.t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// wantRateLimited checks a 429 for too many invalid keys, with its
// Retry-After.
func wantRateLimited(t testing.TB, r reply, retryAfter string) {
	t.Helper()
	wantError(t, r.status, r.body, http.StatusTooManyRequests)
	if code := jsonOf[apiError](t, r.body).Error.Code; code != "rate_limited" {
		t.Errorf("code %q, want rate_limited", code)
	}
	if got := r.header.Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After %q, want %q", got, retryAfter)
	}
}

// clock is a time tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// authLimited is a server with keys that allows 3 invalid keys per
// address at once and one more every 10 s, on a clock the test moves.
func authLimited(t *testing.T, configure func(*apitest.Config)) (*env, *clock) {
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) {
		c.API.Limits.AuthFailureBurst = 3
		c.API.Limits.AuthFailuresPerMinute = 6
		c.API.MCP = mcp.HTTPHandler(mcp.NewServer(c.Runs.Tools, mcp.ServerOptions{}), mcp.HTTPOptions{})
		if configure != nil {
			configure(c)
		}
	}})
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	e.srv.SetAuthClock(clk.Now)
	return e, clk
}

const mcpInitialize = `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
	"capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}`

// Guessing API keys is slowed per client address on every authenticated
// endpoint: invalid keys get 401 until the address's bucket is empty,
// then every request of the address with credentials gets 429 with
// Retry-After, unchecked, while other addresses go on as before.
func TestFailedAuthIsRateLimitedPerAddress(t *testing.T) {
	e, _ := authLimited(t, nil)
	mcpAccept := []string{"Accept", "application/json, text/event-stream"}
	families := []struct {
		name, method, path string
		body               any
		headers            []string
	}{
		{"chat", "POST", "/api/v1/chat", map[string]any{"message": "hello"}, nil},
		{"chat sync", "POST", "/api/v1/chat/sync", map[string]any{"message": "hello"}, nil},
		{"conversations", "GET", "/api/v1/conversations", nil, nil},
		{"approvals", "GET", "/api/v1/approvals/pending", nil, nil},
		{"elicitation", "GET", "/api/v1/elicitation/pending", nil, nil},
		{"clarifications", "GET", "/api/v1/clarifications/pending", nil, nil},
		{"tools", "GET", "/api/v1/tools", nil, nil},
		{"mcp", "POST", "/mcp", mcpInitialize, mcpAccept},
	}
	before := e.snapshot()
	for i, f := range families {
		t.Run(f.name, func(t *testing.T) {
			attacker := e.from("127.0.0." + strconv.Itoa(10+i))
			for n := range 3 {
				r := send(t, attacker, e.request(f.method, f.path, f.body, fmt.Sprintf("guess-%s-%d", f.name, n), f.headers...))
				wantError(t, r.status, r.body, http.StatusUnauthorized)
			}
			r := send(t, attacker, e.request(f.method, f.path, f.body, "guess-"+f.name+"-3", f.headers...))
			wantRateLimited(t, r, "10")
			// A right key from the guessing address is refused unchecked
			// too: answering it would tell a right guess from a wrong one.
			r = send(t, attacker, e.request(f.method, f.path, f.body, aliceKey, f.headers...))
			wantRateLimited(t, r, "10")
			// Another scheme is credentials too.
			r = send(t, attacker, e.request(f.method, f.path, f.body, "", append([]string{"Authorization", "Basic YWxpY2U6eA=="}, f.headers...)...))
			wantRateLimited(t, r, "10")
			// No credentials guess nothing: a plain 401.
			r = send(t, attacker, e.request(f.method, f.path, f.body, "", f.headers...))
			wantError(t, r.status, r.body, http.StatusUnauthorized)

			// Bob, from the address everyone else uses, is unaffected.
			r = send(t, e.ts.Client(), e.request(f.method, f.path, f.body, bobKey, f.headers...))
			if r.status != http.StatusOK {
				t.Errorf("a right key from another address: %d %s", r.status, r.body)
			}
		})
	}
	// Alice's refused requests changed nothing (Bob's went through).
	if got, want := linesOf(e.snapshot(), "alice"), linesOf(before, "alice"); got != want {
		t.Errorf("refused requests changed alice's record:\n%s\nwas\n%s", got, want)
	}

	m := scrape(t, e)
	for reason, want := range map[string]float64{
		"invalid":      3 * float64(len(families)),
		"rate_limited": 3 * float64(len(families)),
		"missing":      float64(len(families)),
	} {
		if got, _ := m.value("trellis_auth_failures_total", "reason", reason); got != want {
			t.Errorf("trellis_auth_failures_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}
}

// An address's bucket refills: one more attempt every 10 s here, and a
// right key once there is a token, which it does not spend.
func TestFailedAuthBucketRefills(t *testing.T) {
	e, clk := authLimited(t, nil)
	c := e.from("127.0.0.2")
	list := func(key string) reply {
		return send(t, c, e.request("GET", "/api/v1/conversations", nil, key))
	}
	for range 3 {
		r := list("wrong")
		wantError(t, r.status, r.body, http.StatusUnauthorized)
	}
	wantRateLimited(t, list("wrong"), "10")
	clk.advance(9 * time.Second)
	wantRateLimited(t, list(aliceKey), "1")
	clk.advance(time.Second)
	if r := list(aliceKey); r.status != http.StatusOK {
		t.Fatalf("a right key once a token is back: %d %s", r.status, r.body)
	}
	if r := list(aliceKey); r.status != http.StatusOK {
		t.Fatalf("a right key spent the token: %d %s", r.status, r.body)
	}
	r := list("wrong")
	wantError(t, r.status, r.body, http.StatusUnauthorized)
	wantRateLimited(t, list("wrong"), "10")
	// Empty long enough, the bucket is full again: 3 more attempts.
	clk.advance(time.Minute)
	for range 3 {
		r := list("wrong")
		wantError(t, r.status, r.body, http.StatusUnauthorized)
	}
	wantRateLimited(t, list("wrong"), "10")
}

// X-Forwarded-For names the client only when the request comes through a
// trusted proxy; anyone else could name a fresh address per guess.
func TestFailedAuthTrustsForwardedForOnlyFromTrustedProxies(t *testing.T) {
	guess := func(e *env, c *http.Client, forwardedFor string) reply {
		return send(t, c, e.request("GET", "/api/v1/tools", nil, "wrong", "X-Forwarded-For", forwardedFor))
	}
	t.Run("no trusted proxies", func(t *testing.T) {
		e, _ := authLimited(t, nil)
		c := e.from("127.0.0.2")
		for _, xff := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"} {
			r := guess(e, c, xff)
			wantError(t, r.status, r.body, http.StatusUnauthorized)
		}
		wantRateLimited(t, guess(e, c, "203.0.113.4"), "10")
	})
	t.Run("behind a trusted proxy", func(t *testing.T) {
		e, _ := authLimited(t, func(c *apitest.Config) { c.API.TrustedProxies = []string{"127.0.0.2", "10.0.0.0/8"} })
		proxy := e.from("127.0.0.2")
		for range 3 {
			r := guess(e, proxy, "203.0.113.1, 10.1.2.3")
			wantError(t, r.status, r.body, http.StatusUnauthorized)
		}
		wantRateLimited(t, guess(e, proxy, "203.0.113.1"), "10")
		// Another client behind the same proxy has its own bucket.
		r := guess(e, proxy, "203.0.113.2")
		wantError(t, r.status, r.body, http.StatusUnauthorized)
		if r := send(t, proxy, e.request("GET", "/api/v1/tools", nil, aliceKey, "X-Forwarded-For", "203.0.113.2")); r.status != http.StatusOK {
			t.Errorf("a right key through the proxy: %d %s", r.status, r.body)
		}
		// A peer that is not a trusted proxy is its own client,
		// whatever it forwards.
		other := e.from("127.0.0.3")
		for _, xff := range []string{"203.0.113.5", "203.0.113.6", "203.0.113.7"} {
			r := guess(e, other, xff)
			wantError(t, r.status, r.body, http.StatusUnauthorized)
		}
		wantRateLimited(t, guess(e, other, "203.0.113.8"), "10")
	})
	st, _, closeDB := newStorage(t, sqliteBackend).open(t, "", "")
	defer closeDB()
	for _, bad := range []string{"proxy.example", "10.0.0.0/33"} {
		if _, err := apitest.New(apitest.Config{API: api.Config{Store: st, TrustedProxies: []string{bad}}}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("TrustedProxies %q: %v", bad, err)
		}
	}
}

// Switched off, or in local mode (no keys, nothing to guess), invalid
// credentials are never rate-limited.
func TestFailedAuthLimitOff(t *testing.T) {
	off := newEnv(t, envOptions{configure: func(c *apitest.Config) { c.API.Limits.AuthFailuresPerMinute = -1 }})
	for range 30 {
		status, body := off.doAs("wrong", "GET", "/api/v1/tools", nil)
		wantError(t, status, body, http.StatusUnauthorized)
	}
	local := newEnv(t, envOptions{local: true})
	for range 30 {
		if status, body := local.doAs("anything", "GET", "/api/v1/tools", nil); status != http.StatusOK {
			t.Fatalf("local mode: %d %s", status, body)
		}
	}
}

// linesOf returns the lines of a snapshot about user.
func linesOf(snapshot, user string) string {
	var b strings.Builder
	for l := range strings.Lines(snapshot) {
		if strings.HasPrefix(l, user) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// The key may come as X-Api-Key, as the LangGraph SDK sends it: it names
// the same user as Bearer, and wrong keys there are counted against the
// address like any others.
func TestAPIKeyHeader(t *testing.T) {
	e, _ := authLimited(t, nil)
	c := e.from("127.0.0.3")
	list := func(headers ...string) reply {
		return send(t, c, e.request("GET", "/api/v1/conversations", nil, "", headers...))
	}
	if r := list("X-Api-Key", aliceKey); r.status != http.StatusOK {
		t.Fatalf("a right key in X-Api-Key: %d %s", r.status, r.body)
	}
	// Authorization wins when both come.
	r := list("X-Api-Key", aliceKey, "Authorization", "Bearer wrong")
	wantError(t, r.status, r.body, http.StatusUnauthorized)
	for range 2 {
		r := list("X-Api-Key", "wrong")
		wantError(t, r.status, r.body, http.StatusUnauthorized)
	}
	wantRateLimited(t, list("X-Api-Key", "wrong"), "10")
	wantRateLimited(t, list("X-Api-Key", aliceKey), "10")
}
