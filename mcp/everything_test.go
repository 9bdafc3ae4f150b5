package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/mcp"
	"github.com/trellis-ai/trellis/operators"
)

// everythingStdio is the reference server @modelcontextprotocol/server-
// everything over stdio, as installed from testdata/package-lock.json.
func everythingStdio(t *testing.T, name string) mcp.ServerConfig {
	dir := nodeModules(t)
	return mcp.ServerConfig{Name: name, Transport: mcp.TransportStdio, Command: "node",
		Args: []string{filepath.Join(dir, "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"}}
}

// freePort picks a free TCP port on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEverythingHTTP runs server-everything's streamable HTTP transport on
// 127.0.0.1 (testdata/loopback.cjs keeps it off other interfaces) and
// returns its /mcp URL and the process; both end with the test.
func startEverythingHTTP(t *testing.T, port int) (string, *exec.Cmd) {
	t.Helper()
	dir := nodeModules(t)
	if port == 0 {
		port = freePort(t)
	}
	loopback, err := filepath.Abs("testdata/loopback.cjs")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "--require", loopback,
		filepath.Join(dir, "@modelcontextprotocol", "server-everything", "dist", "index.js"), "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server-everything (http) output:\n%s", out.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	eventually(t, "server-everything to listen on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + addr + "/mcp", cmd
}

// TestEverything runs the reference server over stdio and streamable HTTP.
// It speaks the session revision 2025-11-25: Trellis detects that (the
// server/discover probe fails) and connects with initialize.
func TestEverything(t *testing.T) {
	nodeModules(t)
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, []mcp.ServerConfig{everythingStdio(t, "everything")}, harnessOptions{})
		h.wait()
		checkEverything(t, h)
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		url, _ := startEverythingHTTP(t, 0)
		h := newHarness(t, []mcp.ServerConfig{{Name: "everything", Transport: mcp.TransportHTTP, URL: url}}, harnessOptions{})
		h.wait()
		checkEverything(t, h)
	})
}

func checkEverything(t *testing.T, h *harness) {
	t.Helper()
	if st := h.status("everything"); st.ProtocolVersion != "2025-11-25" {
		t.Fatalf("status = %+v", st)
	}
	t.Run("list", func(t *testing.T) {
		for _, name := range []string{"echo", "get-sum", "trigger-long-running-operation", "trigger-elicitation-request",
			"get-structured-content", "get-tiny-image"} {
			ti, ok := h.tool(name)
			if !ok || ti.Server != "everything" || ti.Source != operators.SourceMCP || !ti.Available {
				t.Errorf("%s: %+v, listed %v", name, ti, ok)
			}
		}
		if ti, _ := h.tool("trigger-long-running-operation"); !ti.Annotations.ReadOnly || ti.Annotations.Destructive {
			t.Errorf("annotations = %+v", ti.Annotations)
		}
	})
	t.Run("echo and get-sum", func(t *testing.T) {
		if r := h.exec("echo", map[string]any{"message": "hello"}, operators.Call{}); textOf(r) != "Echo: hello" {
			t.Fatalf("echo = %+v", r)
		}
		if r := h.exec("get-sum", map[string]any{"a": 2, "b": 40}, operators.Call{}); textOf(r) != "The sum of 2 and 40 is 42." {
			t.Fatalf("get-sum = %+v", r)
		}
	})
	t.Run("progress", func(t *testing.T) {
		var rec operators.Recorder
		r := h.exec("trigger-long-running-operation", map[string]any{"duration": 0.4, "steps": 4}, operators.Call{ToolCallID: "tc-9", Messenger: &rec})
		if r.IsError() || !strings.Contains(textOf(r), "Steps: 4") {
			t.Fatalf("result = %+v", r)
		}
		var got []float64
		for _, e := range rec.Events() {
			var p events.ToolProgress
			if err := json.Unmarshal(e.Data, &p); err != nil || e.Type != events.TypeToolProgress || p.Total != 4 || p.ToolCallID != "tc-9" {
				t.Fatalf("event %s %s", e.Type, e.Data)
			}
			got = append(got, p.Progress)
		}
		if !slices.Equal(got, []float64{1, 2, 3, 4}) {
			t.Fatalf("progress = %v, want 1..4 in order", got)
		}
	})
	t.Run("elicitation", func(t *testing.T) {
		answer := json.RawMessage(`{"name": "Ada Lovelace", "check": true, "email": "ada@example.com", "integer": 42,
			"untitledSingleSelectEnum": "Joey", "untitledMultipleSelectEnum": ["Piano"], "titledSingleSelectEnum": "hero-2"}`)
		for _, tc := range []struct {
			name   string
			action events.ElicitAction
			want   []string
		}{
			{"accept", events.ElicitAccept, []string{"User provided the requested information", "- Name: Ada Lovelace", "- Email: ada@example.com", "- Favorite Integer: 42"}},
			{"decline", events.ElicitDecline, []string{"User declined"}},
			{"cancel", events.ElicitCancel, []string{"User cancelled"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				asked := make(chan error, 1)
				call := operators.Call{ToolCallID: "tc-1", ConversationID: "c1", UserID: "u1",
					Messenger: user{answer: func(ctx context.Context, p operators.ElicitRequest) operators.ElicitResponse {
						asked <- checkAsked(ctx, p)
						return operators.ElicitResponse{Action: tc.action, Content: answer}
					}}}
				r := h.exec("trigger-elicitation-request", nil, call)
				select {
				case err := <-asked:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("the user was never asked; result = %+v", r)
				}
				for _, w := range tc.want {
					if !strings.Contains(textOf(r), w) {
						t.Fatalf("result lacks %q:\n%s", w, textOf(r))
					}
				}
			})
		}
	})
	t.Run("structured content", func(t *testing.T) {
		r := h.exec("get-structured-content", map[string]any{"location": "Chicago"}, operators.Call{})
		if r.IsError() || len(r.Contents) != 1 || r.Contents[0].Type != operators.OutputJSON {
			t.Fatalf("result = %+v", r)
		}
		var w struct {
			Temperature float64 `json:"temperature"`
			Conditions  string  `json:"conditions"`
		}
		if err := json.Unmarshal(r.Contents[0].JSON, &w); err != nil || w.Temperature != 36 || w.Conditions == "" {
			t.Fatalf("structured = %s (%v)", r.Contents[0].JSON, err)
		}
	})
	t.Run("tiny image", func(t *testing.T) {
		r := h.exec("get-tiny-image", nil, operators.Call{})
		i := slices.IndexFunc(r.Contents, func(c operators.Content) bool { return c.Type == operators.OutputImage })
		if r.IsError() || i < 0 {
			t.Fatalf("result = %+v", r)
		}
		img := r.Contents[i]
		if img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("image = %s, %d bytes starting %q", img.MIMEType, len(img.Data), img.Data[:min(8, len(img.Data))])
		}
		if r.Contents[0].Type != operators.OutputText {
			t.Fatalf("first content = %+v, want the server's text", r.Contents[0])
		}
	})
}

// checkAsked checks server-everything's elicitation as the user gets
// it.
func checkAsked(ctx context.Context, p operators.ElicitRequest) error {
	// The transport must not cut the user's time short (mcp-go allows 30 s).
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 45*time.Second {
		return fmt.Errorf("the elicitation's context ends in %s", time.Until(dl))
	}
	if p.Source != "trigger-elicitation-request" || !strings.Contains(p.Message, "Please provide inputs") || p.Schema == nil || p.Schema.Properties["email"] == nil {
		return fmt.Errorf("unexpected request %s", jsonText(p))
	}
	return nil
}

// TestEverythingKilledMidCall kills the server during a call: the call
// fails, the breaker opens, the server comes back (the manager restarts a
// stdio server; the HTTP one is restarted on its port), and once the
// breaker lets a trial through, calls work again.
func TestEverythingKilledMidCall(t *testing.T) {
	nodeModules(t)
	res := harnessOptions{Resilience: llm.ResilienceConfig{MaxAttempts: 1, FailureThreshold: 1, BreakerDelay: 500 * time.Millisecond}}
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, []mcp.ServerConfig{everythingStdio(t, "everything")}, res)
		h.wait()
		pid := h.status("everything").PID
		r := killMidCall(t, h, func() {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		})
		if !strings.Contains(r.Error, "exited") {
			t.Fatalf("result = %+v, want an error saying the server exited", r)
		}
		eventually(t, "a new server process", func() bool {
			st := h.status("everything")
			return st.State == mcp.StateConnected && st.PID != 0 && st.PID != pid
		})
		eventually(t, "the breaker to let calls through", func() bool {
			return textOf(h.exec("echo", map[string]any{"message": "back"}, operators.Call{})) == "Echo: back"
		})
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		port := freePort(t)
		url, cmd := startEverythingHTTP(t, port)
		h := newHarness(t, []mcp.ServerConfig{{Name: "everything", Transport: mcp.TransportHTTP, URL: url}}, res)
		h.wait()
		killMidCall(t, h, func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		eventually(t, "the server to be marked unavailable", func() bool {
			return h.status("everything").State != mcp.StateConnected
		})
		startEverythingHTTP(t, port)
		eventually(t, "the breaker to let calls through", func() bool {
			return textOf(h.exec("echo", map[string]any{"message": "back"}, operators.Call{})) == "Echo: back"
		})
	})
}

// killMidCall starts a long call, runs kill once it has made progress, and
// checks that the call fails at once and that the breaker then fails
// calls fast.
func killMidCall(t *testing.T, h *harness, kill func()) operators.Result {
	t.Helper()
	progressed := make(chan struct{}, 16)
	done := make(chan operators.Result, 1)
	go func() {
		done <- h.exec("trigger-long-running-operation", map[string]any{"duration": 20, "steps": 100},
			operators.Call{Messenger: &notifyRecorder{progress: progressed}})
	}()
	select {
	case <-progressed:
	case <-time.After(20 * time.Second):
		t.Fatal("no progress from the long-running operation")
	}
	kill()
	var r operators.Result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end when the server died")
	}
	if !r.IsError() || llm.KindOf(r.Err) != llm.KindTransient {
		t.Fatalf("result = %+v, want a transient error", r)
	}
	if r := h.exec("echo", map[string]any{"message": "x"}, operators.Call{}); !errors.Is(r.Err, llm.ErrUnavailable) {
		t.Fatalf("call with the breaker open = %+v", r)
	}
	return r
}

// notifyRecorder signals each progress event.
type notifyRecorder struct {
	operators.Recorder
	progress chan struct{}
}

func (r *notifyRecorder) Progress(ctx context.Context, p events.ToolProgress) error {
	select {
	case r.progress <- struct{}{}:
	default:
	}
	return r.Recorder.Progress(ctx, p)
}
