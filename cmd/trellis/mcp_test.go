package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"
)

// helperEnv makes this test binary run `trellis mcp` (see
// TestMCPVerbHelper), so the tests talk to the real verb over stdio
// without building the binary.
const helperEnv = "TRELLIS_TEST_MCP_VERB"

// TestMCPVerbHelper is not a test: run with helperEnv set, it is
// `trellis mcp`.
func TestMCPVerbHelper(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	code := run(context.Background(), []string{"mcp", "-log-level", "warn"},
		stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr, getenv: os.Getenv})
	os.Exit(code)
}

func helperCommand(t *testing.T) (string, []string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe, []string{"-test.run=^TestMCPVerbHelper$"}
}

// TestMCPVerbGoClient drives `trellis mcp` with mcp-go's client: it lists
// the tools, calls the calculator, and gets an operator's progress.
func TestMCPVerbGoClient(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	exe, args := helperCommand(t)
	c := client.NewClient(transport.NewStdio(exe, []string{helperEnv + "=1"}, args...))
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var progress []string
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == string(mcpgo.MethodNotificationProgress) {
			mu.Lock()
			defer mu.Unlock()
			msg, _ := n.Params.AdditionalFields["message"].(string)
			progress = append(progress, msg)
		}
	})
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = mcpgo.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); v != mcpgo.ProtocolVersion20260728 {
		t.Errorf("protocol %s", v)
	}
	list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"calculator", "current_time", "self_info", "coder", "query_rewriter"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	call := mcpgo.CallToolRequest{}
	call.Params.Name, call.Params.Arguments = "calculator", map[string]any{"expression": "6*7"}
	res, err := c.CallTool(ctx, call)
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(mcpgo.TextContent).Text != "42" {
		t.Fatalf("calculator = %+v, %v", res, err)
	}
	call.Params.Name, call.Params.Arguments = "coder", map[string]any{"query": "print hello in Go"}
	call.Params.Meta = &mcpgo.Meta{ProgressToken: "p1"}
	if res, err = c.CallTool(ctx, call); err != nil || res.IsError {
		t.Fatalf("coder = %+v, %v", res, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(progress)
		mu.Unlock()
		slices.Sort(got)
		if slices.Equal(got, []string{"Done", "Writing code"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress = %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMCPVerbSDKClient: the official TypeScript SDK's client (a script in
// mcp/testdata) connects to `trellis mcp` over stdio.
func TestMCPVerbSDKClient(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("node is not installed")
		}
		t.Fatal("node is not installed")
	}
	testdata, err := filepath.Abs("../../mcp/testdata")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(testdata, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatal("the pinned npm packages are not installed; run npm ci --prefix mcp/testdata: ", err)
	}
	exe, args := helperCommand(t)
	cfg, _ := json.Marshal(map[string]any{
		"transport": "stdio", "command": exe, "args": args, "env": map[string]string{helperEnv: "1"},
		"calls": []map[string]any{
			{"name": "calculator", "arguments": map[string]any{"expression": "2^10"}},
			{"name": "coder", "arguments": map[string]any{"query": "print hello in Go"}},
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(testdata, "sdkclient.mjs"), string(cfg))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sdkclient: %v\n%s", err, stderr.String())
	}
	var rep struct {
		Tools []struct {
			Name         string `json:"name"`
			ReadOnlyHint *bool  `json:"readOnlyHint"`
		} `json:"tools"`
		Results []struct {
			IsError  bool   `json:"isError"`
			Text     string `json:"text"`
			Progress []struct {
				Message string `json:"message"`
			} `json:"progress"`
		} `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("sdkclient printed %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	var calc bool
	for _, tool := range rep.Tools {
		calc = calc || tool.Name == "calculator" && tool.ReadOnlyHint != nil && *tool.ReadOnlyHint
	}
	if !calc {
		t.Fatalf("tools = %+v", rep.Tools)
	}
	if r := rep.Results[0]; r.IsError || r.Text != "1024" {
		t.Fatalf("calculator = %+v", r)
	}
	r := rep.Results[1]
	var msgs []string
	for _, p := range r.Progress {
		msgs = append(msgs, p.Message)
	}
	// mcp-go's stdio server writes notifications from a goroutine of
	// their own, so the last one can follow the response it precedes, and
	// the client then drops it (mcp.exportRun.settle narrows the window;
	// see also mcp/sdk_test.go): ask for progress to arrive, each message
	// one the operator sent, once.
	slices.Sort(msgs)
	if r.IsError || len(msgs) == 0 || len(slices.Compact(slices.Clone(msgs))) != len(msgs) {
		t.Fatalf("coder = %+v", r)
	}
	for _, m := range msgs {
		if m != "Writing code" && m != "Done" {
			t.Fatalf("coder progress %q", msgs)
		}
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{nil, 2, "Usage: trellis <verb>"},
		{[]string{"bogus"}, 2, `unknown verb "bogus"`},
		{[]string{"help"}, 0, "mcp      serve"},
		{[]string{"help"}, 0, "keys     create"},
		{[]string{"help"}, 0, "backup   copy"},
		{[]string{"help"}, 0, "restore  copy"},
		{[]string{"help"}, 0, "prune    remove"},
		{[]string{"prune", "-h"}, 0, "-dry-run"},
		{[]string{"prune", "-keep", "0"}, 2, "want at least 1"},
		{[]string{"prune", "extra"}, 2, "unexpected arguments"},
		{[]string{"prune", "-data-dir", filepath.Join(t.TempDir(), "none")}, 1, "no such file"},
		{[]string{"mcp", "-h"}, 0, "-mcp-config"},
		{[]string{"mcp", "extra"}, 2, "unexpected arguments"},
		{[]string{"mcp", "-log-level", "loud"}, 2, "log level"},
		{[]string{"mcp", "-mcp-config", filepath.Join(t.TempDir(), "none.json")}, 1, "no such file"},
	} {
		var out bytes.Buffer
		code := run(t.Context(), tc.args, stdio{in: strings.NewReader(""), out: &out, err: &out, getenv: func(string) string { return "" }})
		if code != tc.code || !strings.Contains(out.String(), tc.out) {
			t.Errorf("%q: code %d, output %q; want %d and %q", tc.args, code, out.String(), tc.code, tc.out)
		}
	}
}
