package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/trellis-ai/trellis/operators"
)

// ServerOptions configures Trellis' own MCP server. The zero value works.
type ServerOptions struct {
	// Name and Version introduce the server to clients. Defaults
	// "trellis" and "dev".
	Name, Version string
	// Instructions are given to clients at connection.
	Instructions string
	// Export names the MCP servers whose tools are re-exported. Tools of
	// other MCP servers are not: a client that wants them should connect
	// to those servers itself.
	Export []string
	// ElicitationTimeout bounds how long an operator's question (Confirm,
	// Choose, Elicit) waits for a 2026-07-28 client to come back with the
	// answer. Default 5 minutes.
	ElicitationTimeout time.Duration
	// CallInfo fills the operators.Call of each tool call (conversation
	// and user ids, say, from values an HTTP middleware put in ctx); nil
	// leaves them empty. Tool, ToolCallID and Messenger are set by the
	// server.
	CallInfo func(ctx context.Context) operators.Call
	// Logger hears failures; nil discards.
	Logger *slog.Logger
}

// NewServer returns an MCP server that exposes p's local tools and
// operators, and the tools of the MCP servers named in opts.Export, with
// their input schemas and annotations. Serve it over stdio with
// [ServeStdio] or over streamable HTTP with [HTTPHandler]; it speaks
// 2026-07-28 and the session revisions.
//
// While a tool runs, its progress becomes notifications/progress (when the
// client sent a progress token), and an operator's Confirm, Choose or
// Elicit becomes an elicitation to the client when the client declared the
// capability: an input request for 2026-07-28 clients (the call is parked
// until the client retries with the answer), elicitation/create for
// session clients. A client without the capability gets the behaviour of
// a run with no user: the question is declined. Content an operator sends
// straight to the user is prepended to the tool's result.
//
// The tool list follows p: tools added or removed (an exported MCP server
// connecting, say) are announced with notifications/tools/list_changed.
func NewServer(p *operators.Provider, opts ServerOptions) *server.MCPServer {
	if opts.Name == "" {
		opts.Name = "trellis"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.ElicitationTimeout <= 0 {
		opts.ElicitationTimeout = 5 * time.Minute
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	x := &exporter{p: p, opts: opts, log: log, parked: map[string]*parkedRun{}}
	hooks := &server.Hooks{}
	hooks.AddBeforeListTools(func(context.Context, any, *mcpgo.ListToolsRequest) { x.sync() })
	hooks.AddBeforeCallTool(func(context.Context, any, *mcpgo.CallToolRequest) { x.sync() })
	srvOpts := []server.ServerOption{
		server.WithToolCapabilities(true), server.WithRecovery(), server.WithHooks(hooks),
	}
	if opts.Instructions != "" {
		srvOpts = append(srvOpts, server.WithInstructions(opts.Instructions))
	}
	x.srv = server.NewMCPServer(opts.Name, opts.Version, srvOpts...)
	x.sync()
	return x.srv
}

// HTTPOptions configures [HTTPHandler]. The zero value works.
type HTTPOptions struct {
	// Logger hears transport failures; nil discards.
	Logger *slog.Logger
	// ContextFunc adds request-scoped values (the authenticated user) to
	// the context tool calls see; nil adds none.
	ContextFunc func(ctx context.Context, r *http.Request) context.Context
	// AllowRemoteHosts turns off the DNS-rebinding guard, which refuses
	// requests to a loopback listener whose Host header is not loopback.
	// Set it behind a reverse proxy that rewrites Host.
	AllowRemoteHosts bool
}

// HTTPHandler serves srv over streamable HTTP: POST (and, for session
// clients, GET and DELETE) on whatever path it is mounted at, e.g.
// r.Handle("/mcp", mcp.HTTPHandler(srv, mcp.HTTPOptions{})).
func HTTPHandler(srv *server.MCPServer, opts HTTPOptions) http.Handler {
	var hopts []server.StreamableHTTPOption
	if opts.Logger != nil {
		hopts = append(hopts, server.WithStreamableHTTPLogger(opts.Logger))
	}
	if opts.ContextFunc != nil {
		hopts = append(hopts, server.WithHTTPContextFunc(opts.ContextFunc))
	}
	if opts.AllowRemoteHosts {
		hopts = append(hopts, server.WithDisableLocalhostProtection(true))
	}
	return server.NewStreamableHTTPServer(srv, hopts...)
}

// ServeStdio serves srv on in and out (a client that started this process)
// until in ends or ctx is cancelled. mcp-go keeps a single stdio session
// per process, so serve at most one stdio connection at a time.
func ServeStdio(ctx context.Context, srv *server.MCPServer, in io.Reader, out io.Writer) error {
	err := server.NewStdioServer(srv).Listen(ctx, in, out)
	if err != nil && err != io.EOF && ctx.Err() == nil {
		return fmt.Errorf("mcp: serve stdio: %w", err)
	}
	return nil
}

// exporter keeps an MCP server's tools in step with a provider and runs
// its tool calls.
type exporter struct {
	p    *operators.Provider
	opts ServerOptions
	log  *slog.Logger
	srv  *server.MCPServer

	syncMu  sync.Mutex
	current map[string]string // tool name → fingerprint of what is registered

	parkMu sync.Mutex
	parked map[string]*parkedRun
}

// exported reports whether t is offered to clients.
func (x *exporter) exported(t operators.ToolInfo) bool {
	if t.Source == operators.SourceMCP {
		return t.Available && slices.Contains(x.opts.Export, t.Server)
	}
	return true
}

// sync registers the provider's current tools, if they changed.
func (x *exporter) sync() {
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	want := map[string]string{}
	var tools []server.ServerTool
	for _, t := range x.p.Tools() {
		if !x.exported(t) {
			continue
		}
		fp, _ := json.Marshal(t)
		want[t.Name] = string(fp)
		tools = append(tools, server.ServerTool{Tool: toMCPTool(t), Handler: x.handler(t.Name)})
	}
	if equalMaps(want, x.current) {
		return
	}
	x.current = want
	x.srv.SetTools(tools...)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// toMCPTool describes t to MCP clients.
func toMCPTool(t operators.ToolInfo) mcpgo.Tool {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil {
		schema = []byte(`{"type":"object"}`)
	}
	tool := mcpgo.NewToolWithRawSchema(t.Name, t.Description, schema)
	a := t.Annotations
	tool.Annotations = mcpgo.ToolAnnotation{
		ReadOnlyHint: &a.ReadOnly, DestructiveHint: &a.Destructive,
		IdempotentHint: &a.Idempotent, OpenWorldHint: &a.OpenWorld,
	}
	return tool
}

// handler runs calls to the tool named name.
func (x *exporter) handler(name string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		if state := req.Params.RequestState; state != "" {
			pr := x.unpark(state)
			if pr == nil {
				return mcpgo.NewToolResultError("this call waited too long for its answer and was dropped; call the tool again"), nil
			}
			return pr.run.resume(ctx, req, pr.ask, server.ElicitationResponse(req.Params.InputResponses, answerKey))
		}
		args := json.RawMessage(req.Params.RawArguments)
		if len(args) == 0 {
			var err error
			if args, err = json.Marshal(req.GetArguments()); err != nil {
				return mcpgo.NewToolResultErrorFromErr("arguments", err), nil
			}
		}
		return x.start(ctx, req, name, args).next(ctx, req)
	}
}
