package mcp

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// cancelNotifyTimeout bounds the sending of one notifications/cancelled.
const cancelNotifyTimeout = 5 * time.Second

// httpTransport wraps mcp-go's streamable HTTP and SSE client transports.
//
// mcp-go sends notifications/cancelled for a request whose context ends
// only over stdio; over HTTP it just abandons the request. Session-based
// servers (protocol revisions up to 2025-11-25) do not take a dropped
// connection as a cancel, so the tool would run on. httpTransport sends
// the notification itself, in the background: the caller returns at once.
// On 2026-07-28 connections, where the closed stream already is the
// cancellation, the notification is sent too (with the per-request _meta
// that revision wants); a server that does not need it ignores it.
type httpTransport struct {
	transport.Interface
	log *slog.Logger
	sse bool // the legacy HTTP+SSE transport

	mu      sync.Mutex
	version string

	life     context.Context // ends at Close
	stopLife context.CancelFunc
	wg       sync.WaitGroup
}

func newHTTPTransport(inner transport.Interface, log *slog.Logger) *httpTransport {
	life, stop := context.WithCancel(context.Background())
	return &httpTransport{Interface: inner, log: log, life: life, stopLife: stop}
}

// SendRequest sends request; when ctx ends before the answer, it tells the
// server to stop working on it.
func (t *httpTransport) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.Interface.SendRequest(ctx, request)
	if err != nil && ctx.Err() != nil && (cancellable(request.Method) || t.sse && request.Method == string(mcpgo.MethodSubscriptionsListen)) {
		t.sendCancelled(request.ID, context.Cause(ctx))
	}
	return resp, err
}

// cancellable reports whether a request of method is cancelled with
// notifications/cancelled: not the handshake (which must not be), and not
// subscriptions/listen, which ends when its stream is closed (except over
// SSE, where its answer comes on the shared stream and only the
// notification ends it).
func cancellable(method string) bool {
	switch mcpgo.MCPMethod(method) {
	case mcpgo.MethodInitialize, mcpgo.MethodServerDiscover, mcpgo.MethodSubscriptionsListen:
		return false
	}
	return true
}

func (t *httpTransport) sendCancelled(id mcpgo.RequestId, reason error) {
	params := map[string]any{"requestId": id, "reason": reason.Error()}
	if v := t.protocolVersion(); mcpgo.IsModernProtocol(v) {
		params["_meta"] = map[string]any{mcpgo.MetaKeyProtocolVersion: v}
	}
	n := mcpgo.JSONRPCNotification{
		JSONRPC: mcpgo.JSONRPC_VERSION,
		Notification: mcpgo.Notification{
			Method: string(mcpgo.MethodNotificationCancelled),
			Params: mcpgo.NotificationParams{AdditionalFields: params},
		},
	}
	t.wg.Go(func() {
		ctx, cancel := context.WithTimeout(t.life, cancelNotifyTimeout)
		defer cancel()
		if err := t.Interface.SendNotification(ctx, n); err != nil {
			t.log.LogAttrs(ctx, slog.LevelDebug, "could not send notifications/cancelled", slog.Any("error", err))
			return
		}
		t.log.LogAttrs(ctx, slog.LevelDebug, "sent notifications/cancelled", slog.String("request_id", id.String()))
	})
}

// SetProtocolVersion records the negotiated version and passes it on.
func (t *httpTransport) SetProtocolVersion(version string) {
	t.mu.Lock()
	t.version = version
	t.mu.Unlock()
	if hc, ok := t.Interface.(transport.HTTPConnection); ok {
		hc.SetProtocolVersion(version)
	}
}

func (t *httpTransport) protocolVersion() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.version
}

// Close closes the transport once the cancel notifications under way are
// sent, or after a second.
func (t *httpTransport) Close() error {
	sent := make(chan struct{})
	go func() {
		t.wg.Wait()
		close(sent)
	}()
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	select {
	case <-sent:
	case <-timer.C:
	}
	t.stopLife()
	<-sent
	return t.Interface.Close()
}

var _ transport.HTTPConnection = (*httpTransport)(nil)
