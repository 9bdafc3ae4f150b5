package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"
	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/api"
	"github.com/trellis-ai/trellis/documents/workspace/sandbox"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/internal/sqlopen"
	"github.com/trellis-ai/trellis/operators"
)

// childArgs, when set, makes the test binary run trellis with these
// arguments instead of the tests: the tests start real server processes
// this way, and kill them.
const childArgs = "TRELLIS_TEST_CHILD_ARGS"

// childIdleTime, when set in a child's environment, is the time its
// SQLite pools keep an unused connection (sqlopen.MaxIdleTime), so that
// a test sees a quiet process close them without waiting a minute.
const childIdleTime = "TRELLIS_TEST_SQLITE_IDLE_TIME"

func TestMain(m *testing.M) {
	if args := os.Getenv(childArgs); args != "" {
		if v := os.Getenv(childIdleTime); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", childIdleTime, err)
				os.Exit(2)
			}
			sqlopen.MaxIdleTime = d
		}
		os.Exit(run(context.Background(), strings.Fields(args), stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr, getenv: os.Getenv}))
	}
	flag.Parse()
	waitBound()
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.Cleanup(func(code int) {
			if countServerDir != "" {
				_ = os.RemoveAll(countServerDir)
			}
			os.Exit(code)
		}))
}

// waitBound lets twice as many of this package's parallel tests run at
// once as -parallel's default, one a core, unless -parallel is given.
// They spend most of their time waiting for child processes to start,
// for deadlines and for learning's delay: two at a time on two cores
// kept the cores about three quarters busy, and this package's tests
// were the longest part of the README's test command.
func waitBound() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
}

func TestParseServe(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	c, err := parseServe(nil, env("HOME", "/home/ada"), io.Discard)
	if err != nil || c.addr != "127.0.0.1:8080" || len(c.keys) != 0 || c.dataDir != "/home/ada/.local/share/trellis" ||
		c.interruptAfter != time.Minute || c.cancelOnDisconnect || c.maxToolResult != 1<<20 || c.unhealthyAfter != time.Minute || c.durability != graph.DurabilityBoundary {
		t.Errorf("defaults: %+v %v", c, err)
	}
	if c.limits.AuthFailuresPerMinute != api.DefaultAuthFailuresPerMin || c.limits.AuthFailureBurst != api.DefaultAuthFailureBurst || c.trustedProxies != nil {
		t.Errorf("auth failure defaults: %+v %v", c.limits, c.trustedProxies)
	}
	c, err = parseServe(nil, env("TRELLIS_API_KEYS", "k1:ada", "TRELLIS_APPROVAL_TOOLS", "calculator, delete_file",
		"TRELLIS_CANCEL_ON_DISCONNECT", "true", "TRELLIS_DATA_DIR", "/srv/trellis", "TRELLIS_MAX_TOOL_RESULT_BYTES", "-1",
		"TRELLIS_AUTH_FAILURES_PER_MINUTE", "-1", "TRELLIS_AUTH_FAILURE_BURST", "3", "TRELLIS_TRUSTED_PROXIES", "10.0.0.0/8, 127.0.0.1"), io.Discard)
	if err != nil || c.addr != ":8080" || c.keys["k1"] != "ada" || len(c.approvalTools) != 2 || !c.cancelOnDisconnect || c.dataDir != "/srv/trellis" ||
		c.maxToolResult != -1 ||
		c.limits.AuthFailuresPerMinute != -1 || c.limits.AuthFailureBurst != 3 || !slices.Equal(c.trustedProxies, []string{"10.0.0.0/8", "127.0.0.1"}) {
		t.Errorf("with keys: %+v %v", c, err)
	}
	if c, err = parseServe(nil, env("TRELLIS_API_KEYS", "k1:ada,k2:bob", "TRELLIS_ADMIN_USERS", "bob"), io.Discard); err != nil ||
		!slices.Equal(c.admins, []string{"bob"}) {
		t.Errorf("admins: %v %v", c.admins, err)
	}
	if c.code != (sandbox.Limits{Time: sandbox.DefaultTime, Memory: sandbox.DefaultMemory, Output: sandbox.DefaultOutput,
		Concurrent: sandbox.DefaultConcurrent()}) {
		t.Errorf("run_code's limits: %+v", c.code)
	}
	if c, err = parseServe(nil, env("TRELLIS_CODE_TIME", "250ms", "TRELLIS_CODE_MEMORY_BYTES", "1048576", "TRELLIS_CODE_OUTPUT_BYTES", "100",
		"TRELLIS_CODE_CONCURRENCY", "3"), io.Discard); err != nil ||
		c.code != (sandbox.Limits{Time: 250 * time.Millisecond, Memory: 1 << 20, Output: 100, Concurrent: 3}) {
		t.Errorf("run_code's limits set: %+v %v", c.code, err)
	}
	if _, err := parseServe([]string{"--code-time", "0s", "--code-output-bytes", "-1", "--code-concurrency", "0"}, env(), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "code-time: must be positive") || !strings.Contains(err.Error(), "code-output-bytes: must be positive") ||
		!strings.Contains(err.Error(), "code-concurrency: must be positive") {
		t.Errorf("run_code's limits at 0: %v", err)
	}
	if c, err = parseServe(nil, env("TRELLIS_DURABILITY", "exit"), io.Discard); err != nil || c.durability != graph.DurabilityExit {
		t.Errorf("durability exit: %v %v", c.durability, err)
	}
	if c, err = parseServe([]string{"--durability", "sync"}, env(), io.Discard); err != nil || c.durability != graph.DurabilitySync {
		t.Errorf("durability sync: %v %v", c.durability, err)
	}
	if c, err = parseServe(nil, env("TRELLIS_BUDGET_TOKENS", "5000", "TRELLIS_BUDGET_TOOL_CALLS", "7", "TRELLIS_BUDGET_TIME", "2m"), io.Discard); err != nil ||
		c.budget.Tokens != 5000 || c.budget.ToolCalls != 7 || c.budget.Time != 2*time.Minute || len(c.subAgents.Agents) != 0 {
		t.Errorf("budget: %+v %v", c.budget, err)
	}
	if c.monthlyQuota != 0 {
		t.Errorf("a monthly quota by default: %d", c.monthlyQuota)
	}
	if c, err = parseServe([]string{"--monthly-token-quota", "2000000"}, env("TRELLIS_MONTHLY_TOKEN_QUOTA", "5"), io.Discard); err != nil ||
		c.monthlyQuota != 2_000_000 {
		t.Errorf("monthly quota: %d %v", c.monthlyQuota, err)
	}
	if c.approvalExpiry != (operators.Expiry{Outcome: events.ExpiryReject}) {
		t.Errorf("approvals wait for ever by default: %+v", c.approvalExpiry)
	}
	if c, err = parseServe([]string{"--approval-timeout", "4h", "--approval-expiry", "cancel"}, env(), io.Discard); err != nil ||
		c.approvalExpiry != (operators.Expiry{Timeout: 4 * time.Hour, Outcome: events.ExpiryCancel}) {
		t.Errorf("approval expiry: %+v %v", c.approvalExpiry, err)
	}
	if c.questionExpiry != (operators.Expiry{Outcome: events.ExpiryDecline}) {
		t.Errorf("questions wait for ever by default: %+v", c.questionExpiry)
	}
	if c, err = parseServe([]string{"--question-timeout", "15m", "--question-expiry", "cancel"}, env(), io.Discard); err != nil ||
		c.questionExpiry != (operators.Expiry{Timeout: 15 * time.Minute, Outcome: events.ExpiryCancel}) {
		t.Errorf("question expiry: %+v %v", c.questionExpiry, err)
	}
	if c.clarifyExpiry != (operators.Expiry{Outcome: events.ExpiryContinue}) || c.uncertainExpiry != (operators.Expiry{Outcome: events.ExpirySkip}) {
		t.Errorf("clarifications and uncertain calls wait for ever by default: %+v %+v", c.clarifyExpiry, c.uncertainExpiry)
	}
	if c, err = parseServe([]string{"--clarification-timeout", "1h", "--clarification-expiry", "cancel", "--uncertain-call-timeout", "2h"},
		env("TRELLIS_UNCERTAIN_CALL_EXPIRY", "fail"), io.Discard); err != nil ||
		c.clarifyExpiry != (operators.Expiry{Timeout: time.Hour, Outcome: events.ExpiryCancel}) ||
		c.uncertainExpiry != (operators.Expiry{Timeout: 2 * time.Hour, Outcome: events.ExpiryFail}) {
		t.Errorf("clarification and uncertain call expiry: %+v %+v %v", c.clarifyExpiry, c.uncertainExpiry, err)
	}
	// TRELLIS_AUTH=keys authenticates with issued keys alone, so it may
	// serve beyond loopback, and its admins are users of keys not listed.
	if c, err = parseServe(nil, env("TRELLIS_AUTH", "keys", "TRELLIS_ADDR", "0.0.0.0:8080", "TRELLIS_ADMIN_USERS", "ops"), io.Discard); err != nil ||
		!c.auth || len(c.keys) != 0 {
		t.Errorf("auth keys: %+v %v", c, err)
	}
	if c, err = parseServe(nil, env("TRELLIS_API_KEYS", "k1:ada"), io.Discard); err != nil || !c.auth || c.addr != ":8080" {
		t.Errorf("api keys turn authentication on: %+v %v", c, err)
	}
	if c, err = parseServe(nil, env("TRELLIS_OIDC_ISSUER", "http://127.0.0.1:5556/dex", "TRELLIS_OIDC_AUDIENCE", "trellis",
		"TRELLIS_OIDC_ALGORITHMS", "RS256, ES256", "TRELLIS_ADMIN_USERS", "ops"), io.Discard); err != nil ||
		!c.auth || c.oidc.UserClaim != "sub" || !slices.Equal(c.oidc.Algorithms, []string{"RS256", "ES256"}) || c.addr != ":8080" {
		t.Errorf("oidc: %+v %v", c, err)
	}
	if c, err = parseServe(nil, env("TRELLIS_OIDC_ISSUER", "https://id.example.com", "TRELLIS_OIDC_AUDIENCE", "trellis",
		"TRELLIS_OIDC_REDIRECT_URL", "https://chat.example.com/auth/callback", "TRELLIS_SESSION_TTL", "12h"), io.Discard); err != nil ||
		c.signIn.RedirectURL != "https://chat.example.com/auth/callback" || c.signIn.ClientSecret != "" || c.signIn.SessionTTL != 12*time.Hour {
		t.Errorf("sign-in of a public client: %+v %v", c.signIn, err)
	}
	if c, err = parseServe(nil, env("TRELLIS_OIDC_ISSUER", "https://id.example.com", "TRELLIS_OIDC_AUDIENCE", "trellis",
		"TRELLIS_OIDC_REDIRECT_URL", "https://example.com/tools/trellis/auth/callback"), io.Discard); err != nil ||
		c.signIn.RedirectURL != "https://example.com/tools/trellis/auth/callback" {
		t.Errorf("sign-in under a path prefix: %+v %v", c.signIn, err)
	}
	if c, err = parseServe([]string{"--event-retention-days", "7"}, env("TRELLIS_RETENTION_DAYS", "90"), io.Discard); err != nil ||
		c.eventRetentionDays != 7 || c.retentionDays != 90 {
		t.Errorf("retention: %d days, events %d days, %v", c.retentionDays, c.eventRetentionDays, err)
	}
	// A flag wins over its variable.
	c, err = parseServe([]string{"--addr", "127.0.0.1:9999"}, env("TRELLIS_ADDR", "127.0.0.1:7777"), io.Discard)
	if err != nil || c.addr != "127.0.0.1:9999" {
		t.Errorf("flag over env: %+v %v", c, err)
	}
	for _, bad := range [][]string{
		{"TRELLIS_ADDR", "0.0.0.0:8080"}, // no keys: loopback only
		{"TRELLIS_API_KEYS", "nouser"},
		{"TRELLIS_API_KEYS", "k1:ada", "TRELLIS_ADMIN_USERS", "bob"}, // an admin no key names
		{"TRELLIS_AUTH", "sometimes"},
		{"TRELLIS_OIDC_ISSUER", "https://id.example.com"}, // no audience
		{"TRELLIS_OIDC_AUDIENCE", "trellis"},              // no issuer
		{"TRELLIS_OIDC_ISSUER", "http://id.example.com", "TRELLIS_OIDC_AUDIENCE", "trellis"},
		{"TRELLIS_OIDC_ISSUER", "id.example.com", "TRELLIS_OIDC_AUDIENCE", "trellis"},
		{"TRELLIS_OIDC_ISSUER", "https://id.example.com", "TRELLIS_OIDC_AUDIENCE", "trellis", "TRELLIS_AUTH", "local"},
		{"TRELLIS_AUTH", "local", "TRELLIS_API_KEYS", "k1:ada"},                                               // keys local mode would not check
		{"TRELLIS_OIDC_REDIRECT_URL", "https://chat.example.com/auth/callback", "TRELLIS_API_KEYS", "k1:ada"}, // no issuer
		{"TRELLIS_OIDC_CLIENT_SECRET", "s", "TRELLIS_API_KEYS", "k1:ada"},                                     // a secret nothing uses
		{"TRELLIS_OIDC_ISSUER", "https://id.example.com", "TRELLIS_OIDC_AUDIENCE", "trellis", "TRELLIS_OIDC_REDIRECT_URL", "http://chat.example.com/auth/callback"},
		{"TRELLIS_OIDC_ISSUER", "https://id.example.com", "TRELLIS_OIDC_AUDIENCE", "trellis", "TRELLIS_OIDC_REDIRECT_URL", "https://chat.example.com/callback"},
		{"TRELLIS_OIDC_ISSUER", "https://id.example.com", "TRELLIS_OIDC_AUDIENCE", "trellis", "TRELLIS_OIDC_REDIRECT_URL", "https://chat.example.com/trellis//auth/callback"},
		{"TRELLIS_OIDC_ISSUER", "https://id.example.com", "TRELLIS_OIDC_AUDIENCE", "trellis", "TRELLIS_OIDC_REDIRECT_URL", "https://chat.example.com/a/../auth/callback"},
		{"TRELLIS_OIDC_ISSUER", "https://id.example.com", "TRELLIS_OIDC_AUDIENCE", "trellis", "TRELLIS_OIDC_REDIRECT_URL", "https://chat.example.com/trellis/auth/callback/"},
		{"TRELLIS_API_KEYS", "k1:ada", "TRELLIS_SESSION_TTL", "0s"},
		{"TRELLIS_INTERRUPT_AFTER", "soon"},
		{"TRELLIS_MAX_BODY_BYTES", "lots"},
		{"TRELLIS_MONTHLY_TOKEN_QUOTA", "-1"},
		{"TRELLIS_MONTHLY_TOKEN_QUOTA", "1M"},
		{"TRELLIS_AUTH_FAILURES_PER_MINUTE", "ten"},
		{"TRELLIS_CANCEL_ON_DISCONNECT", "perhaps"},
		{"TRELLIS_UNHEALTHY_AFTER", "later"},
		{"TRELLIS_LOG_LEVEL", "loud"},
		{"TRELLIS_DURABILITY", "later"},
		{"TRELLIS_MAX_TOOL_RESULT_BYTES", "0"},
		{"TRELLIS_MAX_TOOL_RESULT_BYTES", "1MB"},
		{"TRELLIS_BUDGET_TOKENS", "-5"},
		{"TRELLIS_BUDGET_TOOL_CALLS", "many"},
		{"TRELLIS_BUDGET_TIME", "a while"},
		{"TRELLIS_RETENTION_DAYS", "-1"},
		{"TRELLIS_RETENTION_DAYS", "a month"},
		{"TRELLIS_EVENT_RETENTION_DAYS", "-1"},
		{"TRELLIS_EVENT_RETENTION_DAYS", "7d"},
		{"TRELLIS_SUBAGENTS", "/nonexistent/subagents.json"},
		{"TRELLIS_APPROVAL_TIMEOUT", "-1h"},
		{"TRELLIS_APPROVAL_TIMEOUT", "tomorrow"},
		{"TRELLIS_APPROVAL_EXPIRY", "ignore"},
		{"TRELLIS_QUESTION_TIMEOUT", "-1h"},
		{"TRELLIS_QUESTION_TIMEOUT", "tomorrow"},
		{"TRELLIS_QUESTION_EXPIRY", "approve"},
		{"TRELLIS_QUESTION_EXPIRY", "ignore"},
	} {
		if _, err := parseServe(nil, env(bad...), io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// child is a trellis serve process.
type child struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	logs *lockedBuffer
	done chan error
	// startLine is the line serve printed at start.
	startLine string
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe starts `trellis serve` on a free loopback port with env and
// waits for its start line.
func startServe(t *testing.T, env ...string) *child {
	t.Helper()
	return startServeIn(t, "", env...)
}

// startServeIn is startServe in the working directory dir ("": the
// test's).
func startServeIn(t *testing.T, dir string, env ...string) *child {
	t.Helper()
	script, err := filepath.Abs("../../api/testdata/agent.json")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable() // absolute, whatever dir is
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgs+"=serve --addr 127.0.0.1:0",
		"TRELLIS_MODEL=scripted:"+script, "TRELLIS_APPROVAL_TOOLS=calculator", "TRELLIS_LOG_LEVEL=debug")
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = dir
	c := &child{t: t, cmd: cmd, logs: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = c.logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
		if t.Failed() {
			t.Logf("server logs:\n%s", c.logs.String())
		}
		c.done <- nil // for a second cleanup's receive
	})
	select {
	case line := <-lines:
		// trellis serve: http://127.0.0.1:PORT · storage … · models … · auth … · mcp N servers
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[2], "http://127.0.0.1:") || !strings.Contains(line, "storage ") ||
			!(strings.Contains(line, "scripted (default)") || strings.Contains(line, "offline (default)")) || !(strings.Contains(line, "auth local mode") || strings.Contains(line, "auth API keys for ")) || !strings.Contains(line, " · mcp ") {
			t.Fatalf("start line %q", line)
		}
		if strings.Contains(line, "password") {
			t.Fatalf("the start line shows a password: %q", line)
		}
		c.url, c.startLine = f[2], line
	case err := <-c.done:
		t.Fatalf("trellis serve exited: %v\n%s", err, c.logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("no start line\n%s", c.logs.String())
	}
	return c
}

// stop ends the process with sig and waits for it.
func (c *child) stop(sig syscall.Signal) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatal(err)
	}
	select {
	case err := <-c.done:
		if sig == syscall.SIGTERM && err != nil {
			c.t.Errorf("trellis serve after SIGTERM: %v\n%s", err, c.logs.String())
		}
		c.done <- err // the cleanup receives it again
	case <-time.After(30 * time.Second):
		c.t.Fatalf("trellis serve did not stop on %v\n%s", sig, c.logs.String())
	}
}

func (c *child) do(method, path string, body any, headers ...string) *http.Response {
	c.t.Helper()
	resp, err := c.try(method, path, body, headers...)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// try is do for a request that may meet a process being killed: it
// returns the round trip's error rather than failing the test.
func (c *child) try(method, path string, body any, headers ...string) (*http.Response, error) {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp, nil
}

type event struct {
	id   int64
	typ  string
	data map[string]any
}

// sseEvents reads an SSE response to its end with the go-sse client,
// calling stop after each event (true stops reading).
func sseEvents(t *testing.T, resp *http.Response, stop func(event) bool) []event {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	var out []event
	for ev, err := range sse.Read(resp.Body, nil) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		e := event{typ: ev.Type}
		e.id, _ = strconv.ParseInt(ev.LastEventID, 10, 64)
		if err := json.Unmarshal([]byte(ev.Data), &e.data); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		if stop != nil && stop(e) {
			break
		}
	}
	return out
}

// TestRestartWithAParkedApproval kills the server while a run waits for
// an approval — gracefully (SIGTERM parks it) and by crashing (SIGKILL
// leaves it running; the next process recovers it) — on SQLite and on
// PostgreSQL, starts a new server on the same database, approves, and
// watches the run complete: one run id, event ids consecutive across
// both processes.
func TestRestartWithAParkedApproval(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			t.Run(fmt.Sprintf("%s/%v", db, sig), func(t *testing.T) {
				t.Parallel() // each case has its own processes and database; most of it is waiting
				var env []string
				switch db {
				case "sqlite":
					env = []string{"TRELLIS_DATA_DIR=" + t.TempDir()}
				case "postgres":
					env = []string{"DATABASE_URL=" + pgDSN(t)}
				}
				first := startServe(t, env...)
				resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "what is 2+2?"})
				conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
				seen := sseEvents(t, resp, func(e event) bool { return e.typ == "approval.required" })
				approval, _ := seen[len(seen)-1].data["approval_id"].(string)
				if approval == "" {
					t.Fatalf("no approval: %+v", seen)
				}
				// The stream is open, so the run waits in the process for the
				// answer: the process goes away now.
				first.stop(sig)

				second := startServe(t, env...)
				pending := second.do("GET", "/api/v1/approvals/pending?conversation_id="+conv, nil)
				var list struct {
					Approvals []struct {
						ID    string `json:"approval_id"`
						RunID string `json:"run_id"`
					}
				}
				if err := json.NewDecoder(pending.Body).Decode(&list); err != nil || len(list.Approvals) != 1 ||
					list.Approvals[0].ID != approval || list.Approvals[0].RunID != runID {
					t.Fatalf("pending after restart: %+v %v", list, err)
				}
				if r := second.do("POST", "/api/v1/approvals/"+approval, map[string]any{"decision": "approve"}); r.StatusCode != http.StatusOK {
					b, _ := io.ReadAll(r.Body)
					t.Fatalf("approve: %d %s", r.StatusCode, b)
				}
				seen = followToEnd(t, second, conv, runID, seen)
				var typs []string
				for _, e := range seen {
					typs = append(typs, e.typ)
				}
				if !strings.Contains(strings.Join(typs, " "), "approval.resolved") {
					t.Errorf("events: %v", typs)
				}
				conversation := second.do("GET", "/api/v1/conversations/"+conv, nil)
				var c struct {
					Runs     []struct{ Status string }
					Messages []struct{ Role, Content string }
				}
				if err := json.NewDecoder(conversation.Body).Decode(&c); err != nil || len(c.Runs) != 1 || c.Runs[0].Status != "completed" ||
					len(c.Messages) != 2 || c.Messages[1].Content != "Done: all good." {
					t.Errorf("conversation: %+v %v", c, err)
				}
				second.stop(syscall.SIGTERM)
			})
		}
	}
}

// pgDSN makes a fresh schema and returns a URL whose connections use it.
func pgDSN(t testing.TB) string {
	pool := pgtest.New(t)
	cfg := pool.Config()
	schema := cfg.ConnConfig.RuntimeParams["search_path"]
	dsn := cfg.ConnString()
	pool.Close()
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// TestPeerTakesOverARunOfAProcessThatDied runs two servers on one
// PostgreSQL database. The first is killed while its run waits for an
// approval on its open stream; the second, which was up all along,
// claims the run (its owner's session is gone), continues it, and
// completes it once approved: one run id, event ids consecutive across
// both processes.
func TestPeerTakesOverARunOfAProcessThatDied(t *testing.T) {
	t.Parallel()
	env := []string{"DATABASE_URL=" + pgDSN(t), "TRELLIS_CLAIM_INTERVAL=100ms"}
	first, second := startServe(t, env...), startServe(t, env...)
	resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "what is 2+2?"})
	conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
	seen := sseEvents(t, resp, func(e event) bool { return e.typ == "approval.required" })
	approval, _ := seen[len(seen)-1].data["approval_id"].(string)
	first.stop(syscall.SIGKILL)

	// The second process takes the run over and, as nobody watches it
	// there, parks it on the same approval.
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := second.do("GET", "/api/v1/conversations/"+conv, nil)
		var c struct{ Runs []struct{ Status string } }
		err := json.NewDecoder(r.Body).Decode(&c)
		if err == nil && len(c.Runs) == 1 && c.Runs[0].Status == "interrupted" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run was not taken over: %+v %v\n%s", c, err, second.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := second.do("POST", "/api/v1/approvals/"+approval, map[string]any{"decision": "approve"}); r.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(r.Body)
		t.Fatalf("approve: %d %s", r.StatusCode, b)
	}
	followToEnd(t, second, conv, runID, seen)
	second.stop(syscall.SIGTERM)
}

// A models file whose fallbacks go round in a cycle stops the server at
// start, saying why, before it serves anything.
func TestServeRefusesBadFallbacks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "models.json")
	if err := os.WriteFile(file, []byte(`{"models": [
		{"id": "a", "provider": "openai", "base_url": "http://127.0.0.1:1/v1", "fallbacks": ["b"]},
		{"id": "b", "provider": "openai", "base_url": "http://127.0.0.1:1/v1", "fallbacks": ["a"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TRELLIS_MODELS_FILE": file, "TRELLIS_DATA_DIR": filepath.Join(dir, "data"), "TRELLIS_ADDR": "127.0.0.1:0"}
	var out lockedBuffer
	code := run(t.Context(), []string{"serve"}, stdio{in: strings.NewReader(""), out: &out, err: &out, getenv: func(k string) string { return env[k] }})
	if code != 1 || !strings.Contains(out.String(), "fallbacks form a cycle: a → b → a") {
		t.Errorf("exit %d, output:\n%s", code, out.String())
	}
}

// An uncertain call is never run again at its deadline: retry (or run),
// by flag or variable, stops the start with an error that says why; so
// does a word no kind takes.
func TestUncertainCallDeadlineNeverRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"--uncertain-call-timeout", "1h", "--uncertain-call-expiry", "retry"}, want: "never run again"},
		{args: []string{"--uncertain-call-expiry", "run"}, want: "never run again"},
		{env: map[string]string{"TRELLIS_UNCERTAIN_CALL_TIMEOUT": "10m", "TRELLIS_UNCERTAIN_CALL_EXPIRY": "retry"}, want: "never run again"},
		{args: []string{"--uncertain-call-expiry", "approve"}, want: "skip, fail"},
		{args: []string{"--clarification-expiry", "decline"}, want: "continue, cancel"},
	} {
		getenv := func(k string) string { return tc.env[k] }
		_, err := parseServe(tc.args, getenv, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, events.ErrExpiryOutcome) {
			t.Errorf("%v %v: %v, want an error saying %q", tc.args, tc.env, err, tc.want)
		}
	}
}
