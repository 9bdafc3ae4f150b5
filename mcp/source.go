package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
)

// ErrNotConnected: the server is not connected right now (starting,
// reconnecting after a failure, disabled or closed). Calls fail with it
// at once, as transient errors that were not sent: the provider's breaker
// counts them, and its retry tries again for any tool.
var ErrNotConnected = errors.New("mcp: server not connected")

// State is where a server's connection stands.
type State string

const (
	StateDisabled     State = "disabled"     // configured off; never started
	StateConnecting   State = "connecting"   // an attempt is under way
	StateConnected    State = "connected"    // ready for calls
	StateDisconnected State = "disconnected" // failed or lost; retrying after a backoff
	StateClosed       State = "closed"       // the manager was closed
)

// remote is one configured MCP server: the tool source the provider calls,
// and the loop that keeps it connected.
type remote struct {
	m      *Manager
	cfg    ServerConfig
	log    *slog.Logger
	relist chan struct{}
	http   *http.Client // m's, its answers bounded by MaxMessageBytes

	mu       sync.Mutex
	conn     *conn
	state    State
	err      error
	since    time.Time
	attempts int
	retryAt  time.Time
	byName   map[string]toolEntry
	learned  dialOptions // what detection found out; reused on reconnect
}

var (
	_ operators.ApprovalSource          = (*remote)(nil)
	_ operators.ExpirySource            = (*remote)(nil)
	_ operators.ElicitationExpirySource = (*remote)(nil)
)

func newRemote(m *Manager, cfg ServerConfig) *remote {
	s := &remote{
		m: m, cfg: cfg, log: m.log.With(slog.String("mcp_server", cfg.Name)),
		relist: make(chan struct{}, 1), state: StateConnecting, since: time.Now(),
		learned: dialOptions{transport: cfg.Transport, version: pinFor(cfg, cfg.Transport)},
	}
	if cfg.Disabled {
		s.state = StateDisabled
	}
	s.http = m.httpClient
	if m.cfg.MaxMessageBytes > 0 {
		hc := *m.httpClient
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		hc.Transport = &limitTransport{base: base, max: m.cfg.MaxMessageBytes, onDrop: s.answerDropped}
		s.http = &hc
	}
	return s
}

// answerDropped logs an answer larger than MaxMessageBytes; the call it
// answered (id) fails with an error saying so.
func (s *remote) answerDropped(size int, id json.RawMessage) {
	s.log.LogAttrs(context.Background(), slog.LevelWarn, "mcp server answer too large; discarded",
		slog.Int("bytes_read", size), slog.Int("max_bytes", s.m.cfg.MaxMessageBytes), slog.String("id", string(id)))
}

// Name is the server's name, the tool source's name.
func (s *remote) Name() string { return s.cfg.Name }

// ApprovalExpiry is the deadline the server's configuration sets for
// approvals of its tools (approvalTimeout, approvalExpiry).
func (s *remote) ApprovalExpiry() (operators.Expiry, bool) {
	return s.cfg.ApprovalExpiry, s.cfg.ApprovalExpiry.Timeout > 0
}

// ElicitationExpiry is the deadline the server's configuration sets for
// the questions its tools ask (elicitationTimeout, elicitationExpiry).
func (s *remote) ElicitationExpiry() (operators.Expiry, bool) {
	return s.cfg.ElicitationExpiry, s.cfg.ElicitationExpiry.Timeout > 0
}

// RequiresApproval reports whether the server's configuration may ask
// for approval of tool, a name as the provider offers it, which the
// provider needs to know before the server has listed its tools. Offered
// names are the MCP names made safe (safeName) and, when two collide,
// suffixed "_2", "_3"…; a name that could be any listed in
// requireApproval counts.
func (s *remote) RequiresApproval(tool string) bool {
	if s.cfg.ApproveAll {
		return true
	}
	base := strings.TrimRight(tool, "0123456789")
	base, suffixed := strings.CutSuffix(base, "_")
	suffixed = suffixed && len(base) < len(tool)-1
	for _, r := range s.cfg.RequireApproval {
		safe := safeName(r)
		if safe == tool || (suffixed && strings.HasPrefix(safe, base)) {
			return true
		}
	}
	return false
}

// ListTools returns the tools listed when the server connected (or when it
// last announced a change); it does no I/O. While the server is not
// connected it fails, so the provider marks its tools unavailable.
func (s *remote) ListTools(context.Context) ([]operators.Spec, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil, s.notConnectedLocked()
	}
	specs := make([]operators.Spec, 0, len(s.byName))
	for _, e := range s.sortedLocked() {
		specs = append(specs, e.spec)
	}
	return specs, nil
}

func (s *remote) sortedLocked() []toolEntry {
	out := make([]toolEntry, 0, len(s.byName))
	for _, n := range slices.Sorted(maps.Keys(s.byName)) {
		out = append(out, s.byName[n])
	}
	return out
}

// CallTool calls the tool the provider knows as name. A tool error is an
// error result; a failed call is an error classified for the provider's
// retry and breaker (see conn.callError). The provider bounds the call with
// the server's call timeout (see [Config.SourceResilience]).
func (s *remote) CallTool(ctx context.Context, name string, args json.RawMessage, call operators.Call) (operators.Result, error) {
	s.mu.Lock()
	c := s.conn
	t, ok := s.byName[name]
	var notConnected error
	if c == nil {
		notConnected = s.notConnectedLocked()
	}
	s.mu.Unlock()
	if c == nil {
		return operators.Result{}, llm.NotSent(notConnected)
	}
	if !ok {
		return operators.Result{}, llm.Permanent(fmt.Errorf("%w %q on MCP server %s", operators.ErrUnknownTool, name, s.cfg.Name))
	}
	return c.call(ctx, t, args, call)
}

// Health is nil while the server is connected; otherwise it says why not.
func (s *remote) Health(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		return nil
	}
	return s.notConnectedLocked()
}

func (s *remote) notConnectedLocked() error {
	msg := string(s.state)
	if s.state == StateDisconnected && !s.retryAt.IsZero() {
		msg += fmt.Sprintf(", retrying in %s", time.Until(s.retryAt).Round(100*time.Millisecond))
	}
	if s.err != nil {
		return fmt.Errorf("%w: %s (%s): %w", ErrNotConnected, s.cfg.Name, msg, s.err)
	}
	return fmt.Errorf("%w: %s (%s)", ErrNotConnected, s.cfg.Name, msg)
}

// relistSoon asks the loop to list the tools again.
func (s *remote) relistSoon() {
	select {
	case s.relist <- struct{}{}:
	default:
	}
}

// run keeps the server connected until ctx ends: connect, serve until
// the connection is lost, back off, reconnect. A connection that stayed
// up longer than MaxBackoff was no crash loop: once it is lost, the next
// attempt starts at once and the backoff starts over.
func (s *remote) run(ctx context.Context) {
	b := llm.Backoff{Base: s.m.cfg.MinBackoff, Max: s.m.cfg.MaxBackoff, Retrying: s.retrying}
	for b.Run(ctx, s.session) == nil {
	}
}

// session connects and serves until the connection is lost. It fails with
// the connection's error, or a [lostError] when a connection lost too soon
// is to be retried; nil means a connection that stayed up long enough was
// lost.
func (s *remote) session(ctx context.Context) error {
	s.setState(StateConnecting, nil, time.Time{})
	c, tools, err := s.connect(ctx)
	if ctx.Err() != nil {
		if c != nil {
			c.close()
		}
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	connectedAt := time.Now()
	s.connected(ctx, c, tools)
	lostErr := s.serve(ctx, c)
	s.disconnected(c, lostErr)
	s.m.refreshProvider(context.WithoutCancel(ctx))
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case time.Since(connectedAt) > s.m.cfg.MaxBackoff:
		s.setState(StateDisconnected, lostErr, time.Time{})
		return nil
	}
	return &lostError{err: lostErr}
}

// lostError is a connection lost soon after it was made.
type lostError struct{ err error }

func (e *lostError) Error() string { return e.err.Error() }
func (e *lostError) Unwrap() error { return e.err }

// retrying records a failed session and the wait before the next one.
func (s *remote) retrying(err error, _ int, wait time.Duration) {
	if lost := (*lostError)(nil); errors.As(err, &lost) {
		s.setState(StateDisconnected, lost.err, time.Now().Add(wait))
		return
	}
	s.failed(err, wait)
}

// connect makes one connection attempt, with detection: a server that
// fails the server/discover probe is retried pinned to the last session
// revision (2025-11-25); an http URL given without a type that turns out to
// be a legacy SSE server is retried over SSE; a session server over
// streamable HTTP is reopened with its standalone stream, on which it
// announces tool changes. What worked is remembered for reconnects.
func (s *remote) connect(ctx context.Context) (*conn, []toolEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, s.m.cfg.ConnectTimeout)
	defer cancel()
	s.mu.Lock()
	o := s.learned
	s.mu.Unlock()

	c, tools, err := dial(ctx, s, o)
	if err != nil && ctx.Err() == nil {
		retry := o
		switch {
		case o.transport == TransportHTTP && s.cfg.inferred && errors.Is(err, transport.ErrLegacySSEServer):
			retry.transport, retry.version = TransportSSE, pinFor(s.cfg, TransportSSE)
		case o.version == "" && s.cfg.ProtocolVersion == "":
			retry.version = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
		case o.version != pinFor(s.cfg, o.transport):
			retry.version, retry.listen = pinFor(s.cfg, o.transport), false // forget what detection learned
		}
		if retry != o {
			s.mu.Lock()
			level := slog.LevelInfo
			if s.attempts > 0 { // said once is enough for a server that stays down
				level = slog.LevelDebug
			}
			s.mu.Unlock()
			s.log.LogAttrs(ctx, level, "mcp server connection failed; retrying differently",
				slog.Any("error", err), slog.String("transport", string(retry.transport)), slog.String("protocol_version", retry.version))
			o = retry
			c, tools, err = dial(ctx, s, o)
		}
	}
	if err == nil && o.transport == TransportHTTP && !o.listen && !mcpgo.IsModernProtocol(c.version) {
		o.version, o.listen = c.version, true
		c.close()
		c, tools, err = dial(ctx, s, o)
	}
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.learned = o
	s.mu.Unlock()
	entries, warnings := toolEntries(s.cfg, tools)
	for _, w := range warnings {
		s.log.LogAttrs(ctx, slog.LevelWarn, "mcp tool: "+w)
	}
	return c, entries, nil
}

// pinFor is the protocol version to start with over transport t: the
// configured one, else none (detect) — except over SSE, a transport of the
// 2024 revisions whose servers predate server/discover, where it is the
// last session revision.
func pinFor(cfg ServerConfig, t Transport) string {
	if cfg.ProtocolVersion == "" && t == TransportSSE {
		return mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	}
	return cfg.ProtocolVersion
}

// serve waits for the connection to be lost (or ctx to end), listing the
// tools again whenever the server says they changed, or a call failed in a
// way that may mean the server is gone (then a failed listing counts as
// the loss).
func (s *remote) serve(ctx context.Context, c *conn) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.lost:
			return c.lostErr
		case <-s.relist:
			lctx, cancel := context.WithTimeout(ctx, s.m.cfg.ConnectTimeout)
			tools, err := c.listTools(lctx)
			cancel()
			if err != nil {
				var te *transport.Error
				if ctx.Err() == nil && (errors.As(err, &te) || errors.Is(err, context.DeadlineExceeded)) {
					return fmt.Errorf("the server stopped answering: %w", err)
				}
				s.log.LogAttrs(ctx, slog.LevelWarn, "listing the server's tools failed", slog.Any("error", err))
				continue
			}
			entries, warnings := toolEntries(s.cfg, tools)
			for _, w := range warnings {
				s.log.LogAttrs(ctx, slog.LevelWarn, "mcp tool: "+w)
			}
			s.mu.Lock()
			s.byName = byName(entries)
			s.mu.Unlock()
			s.log.LogAttrs(ctx, slog.LevelInfo, "mcp server tools changed", slog.Int("tools", len(entries)))
			s.m.refreshProvider(ctx)
		}
	}
}

func byName(entries []toolEntry) map[string]toolEntry {
	m := make(map[string]toolEntry, len(entries))
	for _, e := range entries {
		m[e.name] = e
	}
	return m
}

// connected makes c the server's connection: the provider lists its tools,
// then the server counts as connected (so Wait returns only once the tools
// can be called).
func (s *remote) connected(ctx context.Context, c *conn, tools []toolEntry) {
	s.mu.Lock()
	s.conn, s.byName = c, byName(tools)
	s.mu.Unlock()
	s.m.refreshProvider(ctx)
	s.mu.Lock()
	s.state, s.err, s.attempts, s.retryAt, s.since = StateConnected, nil, 0, time.Time{}, time.Now()
	s.mu.Unlock()
	attrs := []slog.Attr{slog.String("protocol_version", c.version), slog.String("transport", string(s.learned.transport)), slog.Int("tools", len(tools))}
	if c.proc != nil {
		attrs = append(attrs, slog.Int("pid", c.proc.pid()))
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "mcp server connected", attrs...)
	s.m.changed()
}

func (s *remote) disconnected(c *conn, err error) {
	s.mu.Lock()
	s.conn = nil
	s.mu.Unlock()
	c.close()
	if !errors.Is(err, context.Canceled) {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "mcp server lost; it is unavailable until it reconnects", slog.Any("error", err))
	}
	s.m.changed()
}

func (s *remote) failed(err error, wait time.Duration) {
	s.mu.Lock()
	s.attempts++
	n := s.attempts
	s.state, s.err, s.retryAt, s.since = StateDisconnected, err, time.Now().Add(wait), time.Now()
	s.mu.Unlock()
	level := slog.LevelWarn
	if n > 3 && n%10 != 0 { // a server that stays down is not worth a warning a minute
		level = slog.LevelDebug
	}
	s.log.LogAttrs(context.Background(), level, "mcp server unavailable",
		slog.Any("error", err), slog.Int("attempt", n), slog.Duration("retry_in", wait))
	s.m.changed()
}

func (s *remote) setState(st State, err error, retryAt time.Time) {
	s.mu.Lock()
	if s.state != st {
		s.since = time.Now()
	}
	s.state, s.retryAt = st, retryAt
	if err != nil {
		s.err = err
	}
	s.mu.Unlock()
	s.m.changed()
}

// close stops the server for good; run has returned.
func (s *remote) close() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	if s.state != StateDisabled {
		s.state, s.since = StateClosed, time.Now()
	}
	s.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// status reports the server for [Manager.Status].
func (s *remote) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{
		Name: s.cfg.Name, Transport: s.learned.transport, State: s.state, Required: s.cfg.Required,
		Since: s.since, Attempts: s.attempts, Tools: len(s.byName), RetryAt: s.retryAt,
	}
	if s.err != nil && s.state != StateConnected {
		st.Error = s.err.Error()
	}
	if c := s.conn; c != nil {
		st.ProtocolVersion = c.version
		if c.proc != nil {
			st.PID = c.proc.pid()
		}
	}
	return st
}
