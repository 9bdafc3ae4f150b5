package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/mcp"
	"github.com/trellis-ai/trellis/operators"
)

// cancelAfterProgressResult runs tool through the provider and cancels the
// run as soon as the first progress arrives; the call must return within
// seconds (it does not wait for the server).
func cancelAfterProgressResult(t *testing.T, h *harness, tool string, args any) operators.Result {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	progressed := make(chan struct{}, 64)
	call := operators.Call{Messenger: &notifyRecorder{progress: progressed}}
	b, _ := json.Marshal(args)
	done := make(chan operators.Result, 1)
	go func() { done <- h.provider.Execute(ctx, tool, b, call) }()
	select {
	case <-progressed:
	case r := <-done:
		t.Fatalf("the call ended before any progress: %+v", r)
	case <-time.After(20 * time.Second):
		t.Fatal("no progress")
	}
	cancel()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return after the run was cancelled")
		return operators.Result{}
	}
}

// TestCancelStdio: cancelling the run cancels the call on the server
// (mcp-go sends notifications/cancelled over stdio) and returns at once.
func TestCancelStdio(t *testing.T) {
	t.Parallel()
	logFile := filepath.Join(t.TempDir(), "fake.log")
	cfg := fakeStdio(t, "fake", "stdio")
	cfg.Env["TRELLIS_MCP_FAKE_LOG"] = logFile
	h := newHarness(t, []mcp.ServerConfig{cfg}, harnessOptions{})
	h.wait()
	r := cancelAfterProgressResult(t, h, "slow", map[string]any{"steps": 2000, "step_ms": 10})
	if !r.IsError() || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("result = %+v", r)
	}
	eventually(t, "the server to see the cancel", func() bool {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), "cancelled slow")
	})
}

// recordingProxy forwards to target and records the JSON-RPC messages
// posted through it.
type recordingProxy struct {
	mu   sync.Mutex
	msgs []map[string]any
}

func newRecordingProxy(t *testing.T, target string) (*recordingProxy, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &recordingProxy{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	proxy.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var m map[string]any
			if json.Unmarshal(body, &m) == nil {
				rp.mu.Lock()
				rp.msgs = append(rp.msgs, m)
				rp.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return rp, srv.URL + u.Path
}

// cancelled returns the requestId of every notifications/cancelled seen,
// and the ids of the tools/call requests.
func (rp *recordingProxy) cancelled() (cancels, calls []string) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for _, m := range rp.msgs {
		params, _ := m["params"].(map[string]any)
		switch m["method"] {
		case "notifications/cancelled":
			cancels = append(cancels, jsonText(params["requestId"]))
		case "tools/call":
			calls = append(calls, jsonText(m["id"]))
		}
	}
	return cancels, calls
}

// TestCancelHTTP: over streamable HTTP mcp-go only drops the request;
// Trellis sends notifications/cancelled itself, to a session server
// (server-everything, 2025-11-25) and to a 2026-07-28 one (the fake).
func TestCancelHTTP(t *testing.T) {
	t.Run("2025-11-25 session", func(t *testing.T) {
		t.Parallel()
		target, _ := startEverythingHTTP(t, 0)
		rp, url := newRecordingProxy(t, target)
		h := newHarness(t, []mcp.ServerConfig{{Name: "everything", Transport: mcp.TransportHTTP, URL: url}}, harnessOptions{})
		h.wait()
		r := cancelAfterProgressResult(t, h, "trigger-long-running-operation", map[string]any{"duration": 30, "steps": 300})
		if !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("result = %+v", r)
		}
		eventually(t, "notifications/cancelled for the call", func() bool {
			cancels, calls := rp.cancelled()
			return len(calls) > 0 && len(cancels) == 1 && cancels[0] == calls[len(calls)-1]
		})
	})
	t.Run("2026-07-28", func(t *testing.T) {
		t.Parallel()
		seen := make(chan string, 8)
		fake := httptest.NewServer(server.NewStreamableHTTPServer(newFakeServer(func(s string) { seen <- s })))
		t.Cleanup(fake.Close)
		rp, url := newRecordingProxy(t, fake.URL+"/mcp")
		h := newHarness(t, []mcp.ServerConfig{{Name: "fake", Transport: mcp.TransportHTTP, URL: url}}, harnessOptions{})
		h.wait()
		if v := h.status("fake").ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("version %s", v)
		}
		r := cancelAfterProgressResult(t, h, "slow", map[string]any{"steps": 2000, "step_ms": 10})
		if !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("result = %+v", r)
		}
		select {
		case s := <-seen:
			if s != "cancelled slow" {
				t.Fatalf("server saw %q", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the server's handler was not cancelled")
		}
		eventually(t, "notifications/cancelled for the call", func() bool {
			cancels, calls := rp.cancelled()
			return len(calls) > 0 && len(cancels) == 1 && cancels[0] == calls[len(calls)-1]
		})
	})
}

// TestCallTimeout: a call that takes longer than the server's call timeout
// fails with a transient error that says so; time spent waiting for the
// user does not count.
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	cfg := fakeStdio(t, "fake", "stdio")
	cfg.CallTimeout = 400 * time.Millisecond
	h := newHarness(t, []mcp.ServerConfig{cfg}, harnessOptions{})
	h.wait()
	r := h.exec("slow", map[string]any{"steps": 1000, "step_ms": 10}, operators.Call{})
	if !r.IsError() || !strings.Contains(r.Error, "no answer within 400ms") || llm.KindOf(r.Err) != llm.KindTransient {
		t.Fatalf("result = %+v", r)
	}

	call := operators.Call{Messenger: user{answer: func(ctx context.Context, _ operators.ElicitRequest) operators.ElicitResponse {
		select {
		case <-time.After(time.Second): // longer than the call timeout
			return operators.ElicitResponse{Action: events.ElicitAccept, Content: json.RawMessage(`{"name":"Slow Sam"}`)}
		case <-ctx.Done():
			return operators.ElicitResponse{Action: events.ElicitCancel}
		}
	}}}
	if r := h.exec("ask", nil, call); textOf(r) != "action=accept name=Slow Sam" {
		t.Fatalf("ask = %+v", r)
	}
}

// TestSSE: a server on the legacy HTTP+SSE transport, configured as such
// or reached through a typeless url that Trellis first tries as streamable
// HTTP, is served; its progress arrives and calls can be cancelled.
func TestSSE(t *testing.T) {
	t.Parallel()
	seen := make(chan string, 8)
	var sse *server.SSEServer
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sse.ServeHTTP(w, r) }))
	sse = server.NewSSEServer(newFakeServer(func(s string) { seen <- s }), server.WithBaseURL(ts.URL),
		server.WithSSEEndpoint("/events"), server.WithMessageEndpoint("/messages"))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = sse.Shutdown(context.Background()) })

	cfg, err := mcp.ParseConfig([]byte(`{"mcpServers": {"typed": {"type": "sse", "url": "` + ts.URL + `/events"},
		"guessed": {"url": "` + ts.URL + `/events"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, cfg.Servers, harnessOptions{})
	h.wait()
	for _, name := range []string{"typed", "guessed"} {
		if st := h.status(name); st.Transport != mcp.TransportSSE || st.ProtocolVersion != "2025-11-25" {
			t.Fatalf("%s: %+v", name, st)
		}
		if r := h.exec(name+".add", map[string]any{"a": 1, "b": 2}, operators.Call{}); textOf(r) != "3" {
			t.Fatalf("%s.add = %+v", name, r)
		}
	}
	var rec operators.Recorder
	if r := h.exec("typed.slow", map[string]any{"steps": 3, "step_ms": 5}, operators.Call{Messenger: &rec}); textOf(r) != "done 3 steps" || len(rec.Events()) != 3 {
		t.Fatalf("slow = %+v, events %d", r, len(rec.Events()))
	}
	r := cancelAfterProgressResult(t, h, "typed.slow", map[string]any{"steps": 2000, "step_ms": 10})
	if !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("cancelled slow = %+v", r)
	}
	select {
	case s := <-seen:
		if s != "cancelled slow" {
			t.Fatalf("server saw %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not see the cancel")
	}
}
