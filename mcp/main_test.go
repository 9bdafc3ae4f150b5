package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/mcp"
	"github.com/trellis-ai/trellis/operators"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(runFake(mode))
	}
	goleak.VerifyTestMain(m)
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is a provider with a manager over some servers, closed when the
// test ends; its log is printed if the test fails.
type harness struct {
	t        *testing.T
	provider *operators.Provider
	mgr      *mcp.Manager
	logs     *syncBuffer
}

type harnessOptions struct {
	// Resilience is the provider's resilience for every server; zero takes
	// one attempt, a breaker that opens after 3 failures for 300 ms.
	Resilience llm.ResilienceConfig
	// Manager adjusts the manager's configuration.
	Manager func(*mcp.ManagerConfig)
	// Approval is the provider's approval policy.
	Approval operators.ApprovalPolicy
}

func newHarness(t *testing.T, servers []mcp.ServerConfig, o harnessOptions) *harness {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	res := o.Resilience
	if res == (llm.ResilienceConfig{}) {
		res = llm.ResilienceConfig{MaxAttempts: 1, FailureThreshold: 3, BreakerDelay: 300 * time.Millisecond}
	}
	cfg := mcp.Config{Servers: servers}
	p := operators.NewProvider(operators.ProviderConfig{
		Resilience: res, SourceResilience: cfg.SourceResilience(res), Approval: o.Approval, Logger: log,
	})
	mc := mcp.ManagerConfig{
		Servers: servers, Provider: p, Logger: log,
		ConnectTimeout: 20 * time.Second, DiscoverTimeout: 2 * time.Second,
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
	}
	if o.Manager != nil {
		o.Manager(&mc)
	}
	m, err := mcp.NewManager(mc)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, provider: p, mgr: m, logs: logs}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if t.Failed() || os.Getenv("TRELLIS_MCP_TEST_LOG") != "" {
			t.Logf("log:\n%s", logs.String())
		}
	})
	return h
}

// wait waits for the named servers to connect.
func (h *harness) wait(names ...string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 30*time.Second)
	defer cancel()
	if err := h.mgr.Wait(ctx, names...); err != nil {
		h.t.Fatal(err)
	}
}

// status is the named server's status.
func (h *harness) status(name string) mcp.ServerStatus {
	for _, st := range h.mgr.Status() {
		if st.Name == name {
			return st
		}
	}
	h.t.Fatalf("no server %q", name)
	return mcp.ServerStatus{}
}

// exec runs a tool through the provider, bounded in time.
func (h *harness) exec(name string, args any, call operators.Call) operators.Result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 60*time.Second)
	defer cancel()
	b, err := json.Marshal(args)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.provider.Execute(ctx, name, b, call)
}

// tool finds a tool in the provider's list.
func (h *harness) tool(name string) (operators.ToolInfo, bool) {
	for _, ti := range h.provider.Tools() {
		if ti.Name == name {
			return ti, true
		}
	}
	return operators.ToolInfo{}, false
}

// eventually polls cond until it holds, failing after 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeStdio is a stdio server run by this test binary in mode.
func fakeStdio(t *testing.T, name, mode string) mcp.ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.ServerConfig{Name: name, Transport: mcp.TransportStdio, Command: exe, Args: []string{"-test.run=^$"},
		Env: map[string]string{fakeEnv: mode}}
}

// nodeModules returns mcp/testdata/node_modules, installed by .ci/run
// (npm ci --prefix mcp/testdata). Without node the test is skipped, except
// in CI, where it fails.
func nodeModules(t *testing.T) string {
	t.Helper()
	skipOrFail := func(msg string) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail("node is not installed: " + err.Error())
	}
	dir, err := filepath.Abs("testdata/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "@modelcontextprotocol", "server-everything")); err != nil {
		t.Fatal("the pinned npm packages are not installed; run npm ci --prefix mcp/testdata: " + err.Error())
	}
	return dir
}

// textOf is a result's text, or its error.
func textOf(r operators.Result) string { return r.Text() }
