package mcp_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/trellis-ai/trellis/mcp"
	"github.com/trellis-ai/trellis/operators"
)

// deployer is an operator that reports progress and asks the user to
// confirm and to choose, the way real operators talk to the user.
type deployer struct{}

func (deployer) Kind() operators.OperatorKind { return operators.KindHybrid }

func (deployer) Spec() operators.Spec {
	return operators.Spec{
		Description: "Deploys a service after asking where.",
		InputSchema: operators.QuerySchema("the service to deploy"),
		Annotations: operators.Annotations{Destructive: true},
		Messaging:   operators.Capabilities{Progress: true, Elicitation: true},
	}
}

func (deployer) Run(ctx context.Context, oc operators.OperatorContext) (operators.Result, error) {
	_ = oc.Progress(ctx, 1, 3, "checking "+oc.Query)
	ok, err := oc.Confirm(ctx, "Deploy "+oc.Query+"?")
	if err != nil {
		return operators.TextResult("not deployed: " + err.Error()), nil
	}
	if !ok {
		return operators.TextResult("not deployed: the user said no"), nil
	}
	env, err := oc.Choose(ctx, "Where?", []string{"staging", "production"})
	if err != nil || env == "" {
		return operators.TextResult(fmt.Sprintf("not deployed: no environment (%v)", err)), nil
	}
	_ = oc.Progress(ctx, 2, 3, "deploying")
	_ = oc.SendText(ctx, "Deployment started.")
	_ = oc.Progress(ctx, 3, 3, "done")
	return operators.TextResult("deployed " + oc.Query + " to " + env), nil
}

// trellisProvider has the calculator and the deployer.
func trellisProvider() *operators.Provider {
	local := operators.NewRegistry()
	local.MustAdd(operators.Calculator())
	ops := operators.NewOperatorRegistry(nil)
	ops.MustRegister("deployer", func() operators.Operator { return deployer{} })
	return operators.NewProvider(operators.ProviderConfig{Local: local, Operators: ops})
}

// userHandler answers elicitations the way a user of an MCP client would.
type userHandler struct {
	confirm bool
	mu      sync.Mutex
	asked   []string
}

func (u *userHandler) Elicit(_ context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	u.mu.Lock()
	u.asked = append(u.asked, req.Params.Message)
	u.mu.Unlock()
	r := &mcpgo.ElicitationResult{}
	switch {
	case !u.confirm:
		r.Action = mcpgo.ElicitationResponseActionDecline
	case strings.HasPrefix(req.Params.Message, "Deploy"):
		r.Action, r.Content = mcpgo.ElicitationResponseActionAccept, map[string]any{"confirm": true}
	case req.Params.Message == "Where?":
		r.Action, r.Content = mcpgo.ElicitationResponseActionAccept, map[string]any{"choice": "production"}
	}
	return r, nil
}

// connectClient connects an mcp-go client to srv over the transport named
// by via ("http" or "stdio"), pinned to version ("" for the newest).
func connectClient(t *testing.T, srv *server.MCPServer, via, version string, h client.ElicitationHandler) *client.Client {
	t.Helper()
	var tr transport.Interface
	switch via {
	case "http":
		ts := httptest.NewServer(mcp.HTTPHandler(srv, mcp.HTTPOptions{}))
		t.Cleanup(ts.Close)
		var err error
		if tr, err = transport.NewStreamableHTTP(ts.URL + "/mcp"); err != nil {
			t.Fatal(err)
		}
	case "stdio":
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = mcp.ServeStdio(ctx, srv, inR, outW)
		}()
		t.Cleanup(func() {
			cancel()
			inW.Close()
			outW.Close()
			<-done
		})
		tr = transport.NewIO(outR, inW, nil)
	}
	var opts []client.ClientOption
	if h != nil {
		opts = append(opts, client.WithElicitationHandler(h))
	}
	if version != "" {
		opts = append(opts, client.WithProtocolVersion(version))
	}
	c := client.NewClient(tr, opts...)
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil { // the transport lives as long as its Start context
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = mcpgo.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	return c
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any, token any) *mcpgo.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	if token != nil {
		req.Params.Meta = &mcpgo.Meta{ProgressToken: token}
	}
	r, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return r
}

func resultText(r *mcpgo.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(mcpgo.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// TestServer serves the provider's tools to mcp-go clients over stdio and
// streamable HTTP, in both protocol eras.
func TestServer(t *testing.T) {
	for _, via := range []string{"stdio", "http"} {
		for _, version := range []string{"", "2025-11-25"} {
			name := via + "/" + cmpOr(version, "2026-07-28")
			t.Run(name, func(t *testing.T) {
				if via == "http" {
					t.Parallel() // mcp-go keeps one stdio session per process: stdio runs alone
				}
				srv := mcp.NewServer(trellisProvider(), mcp.ServerOptions{})
				user := &userHandler{confirm: true}
				c := connectClient(t, srv, via, version, user)
				if got, want := c.ProtocolVersion(), cmpOr(version, "2026-07-28"); got != want {
					t.Fatalf("protocol %s, want %s", got, want)
				}
				var mu sync.Mutex
				var progress []string
				c.OnNotification(func(n mcpgo.JSONRPCNotification) {
					if n.Method == string(mcpgo.MethodNotificationProgress) {
						mu.Lock()
						progress = append(progress, fmt.Sprint(n.Params.AdditionalFields["progress"], " ", n.Params.AdditionalFields["message"]))
						mu.Unlock()
					}
				})

				list, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tool := range list.Tools {
					names = append(names, tool.Name)
					switch tool.Name {
					case "calculator":
						if a := tool.Annotations; a.ReadOnlyHint == nil || !*a.ReadOnlyHint || !strings.Contains(jsonText(tool.InputSchema), "expression") {
							t.Errorf("calculator = %s", jsonText(tool))
						}
					case "deployer":
						if a := tool.Annotations; a.DestructiveHint == nil || !*a.DestructiveHint {
							t.Errorf("deployer = %s", jsonText(tool))
						}
					}
				}
				if !slices.Equal(names, []string{"calculator", "deployer"}) {
					t.Fatalf("tools = %v", names)
				}

				if r := callTool(t, c, "calculator", map[string]any{"expression": "2+3*4"}, nil); resultText(r) != "14" || r.IsError {
					t.Fatalf("calculator = %s", jsonText(r))
				}
				if r := callTool(t, c, "calculator", map[string]any{"expression": "2+"}, nil); !r.IsError {
					t.Fatalf("bad expression = %s", jsonText(r))
				}

				r := callTool(t, c, "deployer", map[string]any{"query": "web"}, "p-1")
				if got := resultText(r); got != "Deployment started.\ndeployed web to production" {
					t.Fatalf("deployer = %q", got)
				}
				if !slices.Equal(user.asked, []string{"Deploy web?", "Where?"}) {
					t.Fatalf("asked = %q", user.asked)
				}
				// mcp-go's server queues notifications apart from responses,
				// so they may trail the result, and not always in order.
				want := []string{"1 checking web", "2 deploying", "3 done"}
				all := func() bool {
					mu.Lock()
					defer mu.Unlock()
					for _, w := range want {
						if !slices.Contains(progress, w) {
							return false
						}
					}
					return true
				}
				for deadline := time.Now().Add(10 * time.Second); !all(); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						mu.Lock()
						t.Fatalf("progress = %q, want %q", progress, want)
					}
				}

				user.confirm = false
				if r := callTool(t, c, "deployer", map[string]any{"query": "db"}, nil); resultText(r) != "not deployed: the user said no" {
					t.Fatalf("declined deployer = %q", resultText(r))
				}
			})
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestServerNoElicitation: a client without the elicitation capability is
// treated like a run with no user.
func TestServerNoElicitation(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"", "2025-11-25"} {
		c := connectClient(t, mcp.NewServer(trellisProvider(), mcp.ServerOptions{}), "http", version, nil)
		r := callTool(t, c, "deployer", map[string]any{"query": "web"}, nil)
		if got := resultText(r); !strings.HasPrefix(got, "not deployed: operators: no user to ask") {
			t.Fatalf("%s: deployer = %q", version, got)
		}
	}
}

// TestServerElicitationTimeout: a client that takes longer than the
// elicitation timeout to answer finds the call dropped (the run was
// cancelled), in both eras.
func TestServerElicitationTimeout(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"", "2025-11-25"} {
		srv := mcp.NewServer(trellisProvider(), mcp.ServerOptions{ElicitationTimeout: 200 * time.Millisecond})
		c := connectClient(t, srv, "http", version, slowUser{delay: 600 * time.Millisecond})
		r := callTool(t, c, "deployer", map[string]any{"query": "web"}, nil)
		if !r.IsError || !strings.Contains(resultText(r), "call the tool again") {
			t.Fatalf("%s: deployer = %s", version, jsonText(r))
		}
	}
}

// slowUser accepts every elicitation, after a delay.
type slowUser struct{ delay time.Duration }

func (u slowUser) Elicit(ctx context.Context, _ mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	select {
	case <-time.After(u.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r := &mcpgo.ElicitationResult{}
	r.Action, r.Content = mcpgo.ElicitationResponseActionAccept, map[string]any{"confirm": true}
	return r, nil
}

// TestServerExport: remote MCP tools are offered only for servers named in
// Export.
func TestServerExport(t *testing.T) {
	t.Parallel()
	local := operators.NewRegistry()
	local.MustAdd(operators.Calculator())
	p := operators.NewProvider(operators.ProviderConfig{Local: local})
	m, err := mcp.NewManager(mcp.ManagerConfig{Servers: []mcp.ServerConfig{fakeStdio(t, "fake", "stdio")}, Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := m.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		export []string
		want   bool
	}{{nil, false}, {[]string{"fake"}, true}} {
		c := connectClient(t, mcp.NewServer(p, mcp.ServerOptions{Export: tc.export}), "http", "", nil)
		list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		has := slices.ContainsFunc(list.Tools, func(t mcpgo.Tool) bool { return t.Name == "add" })
		if has != tc.want {
			t.Fatalf("export %v: add listed = %v", tc.export, has)
		}
		if tc.want {
			if r := callTool(t, c, "add", map[string]any{"a": 20, "b": 22}, nil); resultText(r) != "42" {
				t.Fatalf("add through trellis = %s", jsonText(r))
			}
		}
	}
}
