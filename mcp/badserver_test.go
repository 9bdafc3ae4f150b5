package mcp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/mcp"
	"github.com/trellis-ai/trellis/operators"
)

// TestBadServers: servers that exit at start, never answer, or write
// something other than JSON-RPC are reported as unavailable with the
// reason, retried, and do not disturb a healthy server beside them.
func TestBadServers(t *testing.T) {
	t.Parallel()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client leave
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	malformed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc": "2.0", "id": 1, "result": {oops`))
	}))
	t.Cleanup(malformed.Close)

	servers := []mcp.ServerConfig{
		fakeStdio(t, "good", "stdio"),
		fakeStdio(t, "exits", "exit"),
		fakeStdio(t, "silent", "silent"),
		fakeStdio(t, "garbage", "garbage"),
		{Name: "http_hang", Transport: mcp.TransportHTTP, URL: hang.URL + "/mcp"},
		{Name: "http_malformed", Transport: mcp.TransportHTTP, URL: malformed.URL + "/mcp"},
	}
	servers[0].Required = true
	h := newHarness(t, servers, harnessOptions{Manager: func(c *mcp.ManagerConfig) {
		c.ConnectTimeout, c.DiscoverTimeout = 1500*time.Millisecond, 300*time.Millisecond
	}})
	h.wait("good")
	if err := h.mgr.Ready(); err != nil {
		t.Fatalf("Ready with the required server up: %v", err)
	}

	for _, tc := range []struct{ name, want string }{
		{"exits", "exit status 3"},
		{"exits", "FAKE_API_KEY is not set"},
		{"silent", "did not answer within 1.5s"},
		{"garbage", "not JSON-RPC"},
		{"garbage", "Welcome to the server!"},
		{"garbage", "did not answer within 1.5s"},
		{"http_hang", "did not answer within 1.5s"},
		{"http_malformed", "answer is not valid JSON-RPC"},
	} {
		eventually(t, tc.name+" to report "+tc.want, func() bool {
			st := h.status(tc.name)
			return st.State != mcp.StateConnected && st.Attempts > 0 && strings.Contains(st.Error, tc.want)
		})
		st := h.status(tc.name)
		err := h.mgr.Wait(expired(t), tc.name)
		if !errors.Is(err, mcp.ErrNotConnected) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("Wait(%s) = %v", tc.name, err)
		}
		t.Logf("%s: %s", tc.name, st.Error)
	}
	// They are retried.
	eventually(t, "exits to be retried", func() bool { return h.status("exits").Attempts >= 2 })
	// The healthy server works all along.
	if r := h.exec("add", map[string]any{"a": 1, "b": 1}, operators.Call{}); textOf(r) != "2" {
		t.Fatalf("add = %+v", r)
	}
	var health []string
	for _, sh := range h.provider.Health(t.Context()) {
		if sh.Err != nil {
			health = append(health, sh.Name)
		}
	}
	if strings.Join(health, ",") != "exits,garbage,http_hang,http_malformed,silent" {
		t.Fatalf("unhealthy = %v", health)
	}
}

// expired is a context that has already ended.
func expired(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// TestDiscoverChoker: a legacy server that exits when the first message is
// not initialize (the server/discover probe) still connects: the manager
// retries pinned to 2025-11-25 and remembers it.
func TestDiscoverChoker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []mcp.ServerConfig{fakeStdio(t, "choker", "choke")}, harnessOptions{})
	h.wait()
	if st := h.status("choker"); st.ProtocolVersion != "2025-11-25" {
		t.Fatalf("status = %+v", st)
	}
	if r := h.exec("add", map[string]any{"a": 40, "b": 2}, operators.Call{}); textOf(r) != "42" {
		t.Fatalf("add = %+v", r)
	}
	if !strings.Contains(h.logs.String(), "retrying differently") {
		t.Fatalf("the fallback was not logged:\n%s", h.logs.String())
	}
}

// TestRequiredServerNotReady: Ready names a required server that is down.
func TestRequiredServerNotReady(t *testing.T) {
	t.Parallel()
	cfg := fakeStdio(t, "needed", "exit")
	cfg.Required = true
	h := newHarness(t, []mcp.ServerConfig{cfg}, harnessOptions{})
	eventually(t, "a failed attempt", func() bool { return h.status("needed").Attempts > 0 })
	err := h.mgr.Ready()
	if !errors.Is(err, mcp.ErrNotConnected) || !strings.Contains(err.Error(), "needed") {
		t.Fatalf("Ready = %v", err)
	}
}

// TestCloseKillsProcessGroup: Close leaves nothing behind, not even what a
// server's command spawned (here a sleep holding the server's stdout).
func TestCloseKillsProcessGroup(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := mcp.ServerConfig{Name: "wrapped", Transport: mcp.TransportStdio, Command: "sh",
		Args: []string{"-c", `sleep 300 & exec "$0" -test.run='^$'`, exe}, Env: map[string]string{fakeEnv: "stdio"}}
	h := newHarness(t, []mcp.ServerConfig{cfg}, harnessOptions{})
	h.wait()
	pgid := h.status("wrapped").PID
	if r := h.exec("add", map[string]any{"a": 1, "b": 2}, operators.Call{}); textOf(r) != "3" {
		t.Fatalf("add = %+v", r)
	}
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("process group %d: %v", pgid, err)
	}
	if err := h.mgr.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the process group to be gone", func() bool { return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) })
	if st := h.status("wrapped"); st.State != mcp.StateClosed {
		t.Fatalf("status = %+v", st)
	}
}

// TestBrokenServerAsksOnlyWhatARuleCouldAsk: while a server has never
// listed its tools, a name no source offers needs approval only when a
// rule could ask for it from that server: the server's requireApproval
// (by its MCP name, made safe), the policy's names, plain or qualified,
// or a policy asking for every destructive tool. A name the model made
// up is no question to the user.
func TestBrokenServerAsksOnlyWhatARuleCouldAsk(t *testing.T) {
	t.Parallel()
	broken := fakeStdio(t, "broken", "exit")
	broken.RequireApproval = []string{"send_mail", "odd.name"}
	h := newHarness(t, []mcp.ServerConfig{broken}, harnessOptions{
		Approval: operators.ApprovalPolicy{Tools: []string{"other_tool", "broken.wipe"}},
	})
	eventually(t, "a failed attempt", func() bool { return h.status("broken").Attempts > 0 })
	for name, want := range map[string]bool{
		"hallucinated":        false,
		"broken.hallucinated": false,
		"elsewhere.send_mail": false, // no such server
		"send_mail":           true,
		"broken.send_mail":    true,
		"odd_name":            true,
		"odd_name_2":          true, // as it would be offered beside a colliding name
		"wipe":                true,
		"broken.wipe":         true,
		"other_tool":          true,
	} {
		if got := h.provider.NeedsApproval(name); got != want {
			t.Errorf("NeedsApproval(%q) = %v, want %v", name, got, want)
		}
	}

	all := fakeStdio(t, "gated", "exit")
	all.ApproveAll = true
	h = newHarness(t, []mcp.ServerConfig{all}, harnessOptions{})
	eventually(t, "a failed attempt", func() bool { return h.status("gated").Attempts > 0 })
	if !h.provider.NeedsApproval("hallucinated") {
		t.Error("a server that asks for every tool: an unknown name must ask")
	}

	h = newHarness(t, []mcp.ServerConfig{fakeStdio(t, "plain", "exit")}, harnessOptions{
		Approval: operators.ApprovalPolicy{Destructive: true},
	})
	eventually(t, "a failed attempt", func() bool { return h.status("plain").Attempts > 0 })
	if !h.provider.NeedsApproval("hallucinated") {
		t.Error("a policy that asks for destructive tools: an unlisted tool may be one, so it must ask")
	}
}
