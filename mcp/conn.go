package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
)

// conn is one live session with a server: an mcp-go client over its
// transport (and, for stdio, the child process). It is made by dial and
// ends with close; a server makes a new one after a loss.
type conn struct {
	srv     *remote
	client  *client.Client
	proc    *process       // stdio only
	http    *httpTransport // http and sse only
	version string
	caps    mcpgo.ServerCapabilities

	life    context.Context // ends at close
	endLife context.CancelFunc
	calls   callTable

	lostOnce sync.Once
	lost     chan struct{} // closed when the connection is found dead
	lostErr  error

	stopListen func() // ends a 2026-07-28 subscriptions/listen stream; nil if none
}

// dialOptions are the choices one connection attempt makes.
type dialOptions struct {
	transport Transport
	// version pins the protocol revision ("" probes with server/discover).
	version string
	// listen opens the standalone GET stream of a session-based streamable
	// HTTP server, where it sends notifications that belong to no request
	// (tools/list_changed).
	listen bool
}

// dial connects: it starts the transport (and the child process), performs
// the handshake and lists the tools. ctx bounds the attempt; the connection
// itself lives until close.
func dial(ctx context.Context, s *remote, o dialOptions) (_ *conn, _ []mcpgo.Tool, err error) {
	c := &conn{srv: s, lost: make(chan struct{})}
	c.life, c.endLife = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	tr, err := c.newTransport(o)
	if err != nil {
		return nil, nil, err
	}
	opts := []client.ClientOption{client.WithElicitationHandler(c)}
	if o.version != "" {
		opts = append(opts, client.WithProtocolVersion(o.version))
	}
	if d := s.m.cfg.DiscoverTimeout; d != 0 {
		opts = append(opts, client.WithDiscoverTimeout(d))
	}
	c.client = client.NewClient(tr, opts...)
	c.client.OnNotification(c.onNotification)
	c.client.OnConnectionLost(func(err error) { c.markLost(fmt.Errorf("connection lost: %w", err)) })
	if err := c.client.Start(c.life); err != nil {
		return nil, nil, c.explain("start", err)
	}
	if c.proc != nil {
		go func() {
			select {
			case <-c.proc.done:
				lost := fmt.Errorf("%w with status 0", errProcessExited)
				if _, exitErr := c.proc.exited(); exitErr != nil {
					lost = fmt.Errorf("%w: %w", errProcessExited, exitErr)
				}
				if d := c.proc.stderr.String(); d != "" {
					lost = fmt.Errorf("%w (stderr: %s)", lost, d)
				}
				c.markLost(lost)
			case <-c.life.Done():
			}
		}()
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = s.m.cfg.ClientInfo
	init, err := c.client.Initialize(ctx, req)
	if err != nil {
		return nil, nil, c.explain("handshake", err)
	}
	c.version, c.caps = init.ProtocolVersion, init.Capabilities
	tools, err := c.listTools(ctx)
	if err != nil {
		return nil, nil, err
	}
	if mcpgo.IsModernProtocol(c.version) && c.caps.Tools != nil && c.caps.Tools.ListChanged {
		stop, lerr := c.client.ListenAsync(c.life, mcpgo.SubscriptionFilter{ToolsListChanged: true}, func(err error) {
			s.log.LogAttrs(c.life, slog.LevelDebug, "subscriptions/listen ended", slog.Any("error", err))
		})
		if lerr == nil {
			c.stopListen = stop
		}
	}
	return c, tools, nil
}

// newTransport builds the client transport o asks for.
func (c *conn) newTransport(o dialOptions) (transport.Interface, error) {
	s := c.srv
	switch o.transport {
	case TransportStdio:
		var limit func(io.Reader) io.Reader
		if max := s.m.cfg.MaxMessageBytes; max > 0 {
			limit = func(r io.Reader) io.Reader { return newLimitReader(r, max, s.answerDropped) }
		}
		p, err := startProcess(s.cfg, s.log, limit)
		if err != nil {
			return nil, err
		}
		c.proc = p
		return transport.NewIO(p.stdout, p.stdin, nil), nil
	case TransportHTTP:
		opts := []transport.StreamableHTTPCOption{
			transport.WithHTTPBasicClient(s.http),
			transport.WithHTTPLogger(s.log),
		}
		if len(s.cfg.Headers) > 0 {
			opts = append(opts, transport.WithHTTPHeaders(s.cfg.Headers))
		}
		if o.listen {
			opts = append(opts, transport.WithContinuousListening())
		}
		inner, err := transport.NewStreamableHTTP(s.cfg.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: %w", s.cfg.Name, err)
		}
		c.http = newHTTPTransport(inner, s.log)
		return &streamableTransport{httpTransport: c.http, inner: inner, url: s.cfg.URL, headers: s.cfg.Headers, client: s.http}, nil
	case TransportSSE:
		opts := []transport.ClientOption{
			transport.WithHTTPClient(s.http),
			transport.WithSSELogger(s.log),
			transport.WithResponseTimeout(24 * time.Hour), // calls are bounded by the call timeout
		}
		if len(s.cfg.Headers) > 0 {
			opts = append(opts, transport.WithHeaders(s.cfg.Headers))
		}
		inner, err := transport.NewSSE(s.cfg.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: %w", s.cfg.Name, err)
		}
		c.http = newHTTPTransport(inner, s.log)
		c.http.sse = true
		return &sseTransport{httpTransport: c.http, inner: inner}, nil
	default:
		return nil, fmt.Errorf("mcp: %s: unknown transport %q", s.cfg.Name, o.transport)
	}
}

// explain turns a failed step into an error that says what happened: for a
// stdio server that means its exit status, stderr and stray output.
func (c *conn) explain(step string, err error) error {
	var se *json.SyntaxError
	var ue *json.UnmarshalTypeError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("the server did not answer within %s: %w", c.srv.m.cfg.ConnectTimeout, err)
	case errors.As(err, &se), errors.As(err, &ue):
		err = fmt.Errorf("the server's answer is not valid JSON-RPC: %w", err)
	}
	if c.proc != nil {
		// A dying child closes stdout a moment before Wait reports it.
		select {
		case <-c.proc.done:
		case <-time.After(200 * time.Millisecond):
		}
		if d := c.proc.describe(); d != "" {
			return fmt.Errorf("mcp: %s: %s: %w (%s)", c.srv.cfg.Name, step, err, d)
		}
	}
	return fmt.Errorf("mcp: %s: %s: %w", c.srv.cfg.Name, step, err)
}

// listTools lists every page of the server's tools.
func (c *conn) listTools(ctx context.Context) ([]mcpgo.Tool, error) {
	res, err := c.client.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		return nil, c.explain("list tools", err)
	}
	return res.Tools, nil
}

// onNotification routes the server's notifications: progress to its call,
// a changed tool list to the server's loop, log messages to the log.
func (c *conn) onNotification(n mcpgo.JSONRPCNotification) {
	switch mcpgo.MCPMethod(n.Method) {
	case mcpgo.MethodNotificationProgress:
		token, ev, ok := progressFromNotification(n)
		if !ok {
			return
		}
		if f := c.calls.get(token); f != nil {
			f.pump.push(ev)
		}
	case mcpgo.MethodNotificationToolsListChanged:
		c.srv.relistSoon()
	case mcpgo.MethodNotificationMessage:
		b, _ := json.Marshal(n.Params.AdditionalFields)
		c.srv.log.LogAttrs(c.life, slog.LevelDebug, "mcp server log", slog.String("message", string(b)))
	}
}

// markLost records that the connection is dead; the server's loop then
// closes it and reconnects.
func (c *conn) markLost(err error) {
	c.lostOnce.Do(func() {
		c.lostErr = err
		close(c.lost)
	})
}

// close ends the session and stops the child process. Calls under way fail
// at once.
func (c *conn) close() {
	c.markLost(errors.New("closed"))
	if c.stopListen != nil {
		c.stopListen()
	}
	c.endLife()
	if c.proc != nil {
		// Kill first: the stdio transport's reader returns only at EOF.
		c.proc.close(time.Second)
	}
	if c.client != nil {
		_ = c.client.Close()
	} else if c.http != nil {
		_ = c.http.Close()
	}
}

// MetaIdempotencyKey is the key of a tool call's _meta that carries its
// idempotency key (see operators.IdempotencyKey): the same call issued
// again, after a crash or a person's "run it again", carries the same
// one, so a server can do what it does once. Namespaced as the MCP
// specification asks of _meta keys that are not its own.
const MetaIdempotencyKey = "trellis/idempotency_key"

// call runs one tool call. Its timeout is the provider's: it bounds the
// whole call, attempts included, and stops while the user answers an
// elicitation (see llm.PauseTimeout).
func (c *conn) call(ctx context.Context, t toolEntry, args json.RawMessage, call operators.Call) (operators.Result, error) {
	select {
	case <-c.lost: // found dead; the server's loop has not replaced it yet
		return operators.Result{}, llm.NotSent(fmt.Errorf("%w: %s: %w", ErrNotConnected, c.srv.cfg.Name, c.lostErr))
	default:
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f := &inflight{tool: t.mcpName, call: call, ctx: ctx}
	c.calls.add(f)
	defer c.calls.remove(f)
	f.pump = startProgress(ctx, call)

	req := mcpgo.CallToolRequest{}
	req.Params.Name = t.mcpName
	if len(args) > 0 && string(args) != "null" {
		req.Params.Arguments = args
	}
	req.Params.Meta = &mcpgo.Meta{ProgressToken: f.token}
	if key := operators.IdempotencyKey(ctx); key != "" {
		req.Params.Meta.AdditionalFields = map[string]any{MetaIdempotencyKey: key}
	}
	res, err := c.client.CallTool(withInflight(ctx, f), req)
	f.pump.finish()
	if err != nil {
		return operators.Result{}, c.callError(ctx, t, err)
	}
	return toResult(c.srv.cfg.Name, t.mcpName, res, t.output), nil
}

// callError classifies a failed call for the provider's resilience:
// the caller giving up passes through; a timeout and a lost connection are
// transient (counted by the breaker, retried only for tools that are safe
// to repeat, since the server may have run the call); a request that never
// left — the connection refused, the server's stdin closed — is transient
// and not sent (retried for any tool); a JSON-RPC error or an answer that
// cannot be parsed is a protocol error, permanent.
func (c *conn) callError(ctx context.Context, t toolEntry, err error) error {
	name := c.srv.cfg.Name + "." + t.mcpName
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, llm.ErrTimeout):
		detail := ""
		if c.proc != nil {
			if d := c.proc.describe(); d != "" {
				detail = " (" + d + ")"
			}
		}
		return llm.Transient(fmt.Errorf("mcp: %s: %w%s", name, cause, detail))
	case ctx.Err() != nil: // the caller gave up: say so in a way llm.KindOf sees
		if cause != nil && !errors.Is(cause, ctx.Err()) {
			return fmt.Errorf("mcp: %s: %w: %w", name, ctx.Err(), cause)
		}
		return fmt.Errorf("mcp: %s: %w", name, ctx.Err())
	}
	var te *transport.Error
	if errors.As(err, &te) {
		if c.notSent(te.Err) {
			lost := c.explain("call "+t.mcpName, err)
			c.markLost(lost)
			return llm.NotSent(lost)
		}
		if connectionLost(te.Err) {
			lost := c.explain("call "+t.mcpName, err)
			c.markLost(lost)
			return llm.Transient(lost)
		}
		var se *json.SyntaxError
		var ue *json.UnmarshalTypeError
		if errors.As(err, &se) || errors.As(err, &ue) {
			return llm.Permanent(fmt.Errorf("mcp: %s: malformed answer: %w", name, err))
		}
		// Not clearly a lost connection ("unexpected nil response" is what
		// mcp-go makes of a stream cut short): have the server's loop check
		// by listing the tools; if that fails too, it reconnects.
		c.srv.relistSoon()
		return llm.Transient(fmt.Errorf("mcp: %s: %w", name, err))
	}
	return llm.Permanent(fmt.Errorf("mcp: %s: %w", name, err))
}

// notSent reports whether a transport error says the request never reached
// the server: an http or sse server that refused the connection (or could
// not be dialled at all), or a stdio server whose stdin no longer takes
// writes (the stdio transport writes the request before it waits, and
// reports only that write's errors and its own closing).
func (c *conn) notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return c.proc != nil && (errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed))
}

// connectionLost reports whether a transport error means the connection
// is gone (rather than one request failing).
func connectionLost(err error) bool {
	var ne net.Error
	return errors.Is(err, transport.ErrTransportClosed) ||
		errors.Is(err, transport.ErrSessionTerminated) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &ne)
}
