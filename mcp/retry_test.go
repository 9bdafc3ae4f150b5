package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/mcp"
	"github.com/trellis-ai/trellis/operators"
)

// faultServer is a real MCP server (mcp-go over streamable HTTP) whose
// tools count their executions, with faults the tests switch on:
//
//	send    says nothing about itself (so it is not safe to repeat)
//	lookup  read-only
//	put     idempotent
//	charge  says nothing, but the configuration lists it as idempotent
//	huge    returns 5 MB of text
//
// While hang is set every tool waits until its request ends. While
// failAfterRun is set, the first execution of each tool runs and is then
// answered 502 Bad Gateway: the server did the work, the client cannot
// know it.
type faultServer struct {
	t       *testing.T
	handler http.Handler

	hang         atomic.Bool
	failAfterRun atomic.Bool

	mu     sync.Mutex
	runs   map[string]int
	failed map[string]bool
	addr   string
	srv    *http.Server
}

func newFaultServer(t *testing.T) *faultServer {
	f := &faultServer{t: t, runs: map[string]int{}, failed: map[string]bool{}}
	s := server.NewMCPServer("fault", "1.0.0", server.WithToolCapabilities(true))
	tool := func(name string, opts ...mcpgo.ToolOption) {
		s.AddTool(mcpgo.NewTool(name, append(opts, mcpgo.WithDescription("Counts its runs."))...),
			func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				f.mu.Lock()
				f.runs[name]++
				f.mu.Unlock()
				if f.hang.Load() {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return mcpgo.NewToolResultText(name + " done"), nil
			})
	}
	tool("send")
	tool("lookup", mcpgo.WithReadOnlyHintAnnotation(true))
	tool("put", mcpgo.WithIdempotentHintAnnotation(true))
	tool("charge")
	s.AddTool(mcpgo.NewTool("huge", mcpgo.WithDescription("Returns 5 MB."), mcpgo.WithReadOnlyHintAnnotation(true)),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(strings.Repeat("0123456789", 500_000)), nil
		})
	inner := server.NewStreamableHTTPServer(s)
	f.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "tools/call" && f.failAfterRun.Load() && f.failFirst(msg.Params.Name) {
			inner.ServeHTTP(httptest.NewRecorder(), r) // the tool runs
			http.Error(w, "upstream hiccup", http.StatusBadGateway)
			return
		}
		inner.ServeHTTP(w, r)
	})
	f.start("127.0.0.1:0")
	t.Cleanup(f.stop)
	return f
}

// failFirst reports whether this is the first failing call of tool.
func (f *faultServer) failFirst(tool string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed[tool] {
		return false
	}
	f.failed[tool] = true
	return true
}

// start serves on addr (again, after stop, on the same address).
func (f *faultServer) start(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		f.t.Fatal(err)
	}
	srv := &http.Server{Handler: f.handler}
	// Each request has its own connection. A connection the client kept
	// idle would race stop: a call sent on it fails with EOF, which a
	// client cannot tell from a server that got the call and died, so it
	// is not refused, and the tests of refused calls would flake.
	srv.SetKeepAlivesEnabled(false)
	f.mu.Lock()
	f.addr, f.srv = ln.Addr().String(), srv
	f.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// stop closes the listener and every connection: calls are refused.
func (f *faultServer) stop() {
	f.mu.Lock()
	srv := f.srv
	f.srv = nil
	f.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

func (f *faultServer) runCount(tool string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[tool]
}

func (f *faultServer) config(timeout time.Duration) mcp.ServerConfig {
	return mcp.ServerConfig{Name: "fault", Transport: mcp.TransportHTTP, URL: "http://" + f.addr + "/mcp",
		CallTimeout: timeout, IdempotentTools: []string{"charge"}}
}

// retrying is a resilience that retries quickly and often, with a breaker
// that does not get in the way.
var retrying = llm.ResilienceConfig{MaxAttempts: 5, BackoffBase: 20 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
	FailureThreshold: 100}

// TestRetryNeverRepeatsASideEffect: a call that failed after the server
// ran it is retried only for tools that are safe to repeat — read-only or
// idempotent by the server's annotations, or by the configuration; a tool
// that says nothing runs exactly once and the call fails.
func TestRetryNeverRepeatsASideEffect(t *testing.T) {
	t.Parallel()
	fs := newFaultServer(t)
	h := newHarness(t, []mcp.ServerConfig{fs.config(0)}, harnessOptions{Resilience: retrying})
	h.wait()
	fs.failAfterRun.Store(true)
	for _, tc := range []struct {
		tool     string
		wantRuns int
		wantOK   bool
	}{
		{"send", 1, false},
		{"lookup", 2, true},
		{"put", 2, true},
		{"charge", 2, true},
	} {
		r := h.exec(tc.tool, nil, operators.Call{})
		if got := fs.runCount(tc.tool); got != tc.wantRuns {
			t.Errorf("%s ran %d times, want %d", tc.tool, got, tc.wantRuns)
		}
		if r.IsError() == tc.wantOK {
			t.Errorf("%s = %+v", tc.tool, r)
		}
		if !tc.wantOK && (!strings.Contains(r.Error, "502") || strings.Contains(r.Error, "gave up after")) {
			t.Errorf("%s error = %q, want the 502 of the one attempt", tc.tool, r.Error)
		}
	}
}

// TestCallTimeoutBoundsTheWholeCall: a tool that hangs runs once, whether
// it may be retried or not, and the call fails with the server's call
// timeout: no attempt follows the one that used it up.
func TestCallTimeoutBoundsTheWholeCall(t *testing.T) {
	t.Parallel()
	fs := newFaultServer(t)
	h := newHarness(t, []mcp.ServerConfig{fs.config(500 * time.Millisecond)}, harnessOptions{Resilience: retrying})
	h.wait()
	fs.hang.Store(true)
	for _, tool := range []string{"send", "lookup"} {
		r := h.exec(tool, nil, operators.Call{})
		if !errors.Is(r.Err, llm.ErrTimeout) || r.Error != "fault: mcp: fault."+tool+": no answer within 500ms" {
			t.Errorf("%s = %q (%v)", tool, r.Error, r.Err)
		}
		if got := fs.runCount(tool); got != 1 {
			t.Errorf("%s ran %d times, want 1", tool, got)
		}
	}
}

// TestNotSentIsRetriedForAnyTool: a call the server never received (its
// connection refused) is safe to retry, so even a tool that is not safe
// to repeat is retried, and runs once the server is back.
func TestNotSentIsRetriedForAnyTool(t *testing.T) {
	t.Parallel()
	fs := newFaultServer(t)
	once := retrying
	once.MaxAttempts = 1
	h := newHarness(t, []mcp.ServerConfig{fs.config(0)}, harnessOptions{Resilience: once})
	patient := newHarness(t, []mcp.ServerConfig{fs.config(0)}, harnessOptions{Resilience: llm.ResilienceConfig{
		MaxAttempts: 1000, BackoffBase: 20 * time.Millisecond, BackoffMax: 20 * time.Millisecond, FailureThreshold: 10000}})
	h.wait()
	patient.wait()
	addr := fs.addr
	fs.stop()

	r := h.exec("send", nil, operators.Call{})
	if !r.IsError() || !llm.SafeToRetry(r.Err) || fs.runCount("send") != 0 {
		t.Fatalf("send to a stopped server = %q (%v), ran %d times; want a failure safe to retry", r.Error, r.Err, fs.runCount("send"))
	}
	if r := h.exec("send", nil, operators.Call{}); !errors.Is(r.Err, mcp.ErrNotConnected) || !llm.SafeToRetry(r.Err) {
		t.Fatalf("send while disconnected = %q (%v)", r.Error, r.Err)
	}

	// With retries, the call waits out the reconnection and runs once.
	done := make(chan operators.Result, 1)
	go func() { done <- patient.exec("send", nil, operators.Call{}) }()
	eventually(t, "a failed reconnection", func() bool { return patient.status("fault").Attempts > 0 })
	fs.start(addr)
	if r := <-done; r.IsError() || r.Text() != "send done" || fs.runCount("send") != 1 {
		t.Fatalf("send = %+v, ran %d times", r, fs.runCount("send"))
	}
}

// TestHugeResultIsCut: a 5 MB result from an MCP server reaches the agent
// cut to the provider's default cap (1 MiB), with a note the model reads
// and the flag the client sees.
func TestHugeResultIsCut(t *testing.T) {
	t.Parallel()
	fs := newFaultServer(t)
	h := newHarness(t, []mcp.ServerConfig{fs.config(0)}, harnessOptions{})
	h.wait()
	r := h.exec("huge", nil, operators.Call{})
	note := "\n[truncated: the result was 5000000 bytes; the first 1048576 are shown]"
	if text := r.Text(); r.IsError() || !r.Truncated || len(text) != 1<<20+len(note) || !strings.HasSuffix(text, note) {
		t.Fatalf("result: truncated %v, %d bytes, error %q", r.Truncated, len(r.Text()), r.Error)
	}
}

// TestAnswerTooLargeIsRefused: an answer above the manager's
// MaxMessageBytes is discarded as it is read, over stdio and over HTTP;
// the call fails saying so, and the connection goes on serving.
func TestAnswerTooLargeIsRefused(t *testing.T) {
	t.Parallel()
	fs := newFaultServer(t)
	h := newHarness(t, []mcp.ServerConfig{fakeStdio(t, "stdio", "huge"), fs.config(0)},
		harnessOptions{Manager: func(c *mcp.ManagerConfig) { c.MaxMessageBytes = 1 << 20 }})
	h.wait()
	pid := h.status("stdio").PID
	for _, tc := range []struct {
		tool string
		args any
	}{
		{"stdio.huge", map[string]any{"n": 3 << 20}},
		{"fault.huge", nil}, // 5 MB
	} {
		r := h.exec(tc.tool, tc.args, operators.Call{})
		if !r.IsError() || !strings.Contains(r.Error, "the server's answer is more than the 1048576 bytes allowed") {
			t.Errorf("%s = %.300s", tc.tool, textOf(r))
		}
	}
	if r := h.exec("stdio.huge", map[string]any{"n": 1000}, operators.Call{}); textOf(r) != strings.Repeat("x", 1000) {
		t.Errorf("a small answer after a large one = %.100s", textOf(r))
	}
	if r := h.exec("fault.lookup", nil, operators.Call{}); textOf(r) != "lookup done" {
		t.Errorf("fault.lookup after a large answer = %q", textOf(r))
	}
	if st := h.status("stdio"); st.State != mcp.StateConnected || st.PID != pid {
		t.Errorf("the stdio server was restarted: %+v", st)
	}
}
