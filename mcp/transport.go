package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// streamableTransport is a streamable HTTP client transport with Trellis'
// two additions: notifications/cancelled (see [httpTransport]) and
// unhurried elicitation answers.
//
// For a session server's elicitation/create, mcp-go gives the handler 30
// seconds and then posts the answer with that same expired context, so a
// user who takes longer is never heard. When the request belongs to a
// call (it arrives on the call's response stream), streamableTransport runs
// the handler on the call's context instead — the elicitation manager's
// own timeout then applies — and posts the answer itself.
type streamableTransport struct {
	*httpTransport
	inner   *transport.StreamableHTTP
	url     string
	headers map[string]string
	client  *http.Client
}

var (
	_ transport.BidirectionalInterface = (*streamableTransport)(nil)
	_ transport.HTTPConnection         = (*streamableTransport)(nil)
)

// answerPostTimeout bounds the posting of one elicitation answer.
const answerPostTimeout = 30 * time.Second

// SetRequestHandler installs h for the server's requests.
func (t *streamableTransport) SetRequestHandler(h transport.RequestHandler) {
	t.inner.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		f := inflightFrom(ctx)
		if req.Method != string(mcpgo.MethodElicitationCreate) || f == nil {
			return h(ctx, req)
		}
		hctx, stop := mergeCancel(context.WithoutCancel(ctx), f.ctx)
		resp, err := h(hctx, req)
		stop()
		if err != nil {
			resp = transport.NewJSONRPCErrorResponse(req.ID, mcpgo.INTERNAL_ERROR, err.Error(), nil)
		}
		pctx, cancel := context.WithTimeout(t.life, answerPostTimeout)
		defer cancel()
		if perr := t.postResponse(pctx, resp); perr != nil {
			t.log.LogAttrs(pctx, slog.LevelWarn, "could not send the elicitation answer to the server", slog.Any("error", perr))
		}
		return nil, nil // answered: the transport sends nothing more
	})
}

// postResponse sends a JSON-RPC response to the server as mcp-go would:
// one POST with the session and protocol headers.
func (t *streamableTransport) postResponse(ctx context.Context, resp *transport.JSONRPCResponse) error {
	body, err := json.Marshal(resp)
	if err != nil {
		return fmt.Errorf("mcp: encode answer: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("mcp: post answer: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id := t.inner.GetSessionId(); id != "" {
		req.Header.Set(transport.HeaderKeySessionID, id)
	}
	if v := t.protocolVersion(); v != "" {
		req.Header.Set(transport.HeaderKeyProtocolVersion, v)
	}
	for _, k := range slices.Sorted(maps.Keys(t.headers)) {
		req.Header.Set(k, t.headers[k])
	}
	res, err := t.client.Do(req)
	if err != nil {
		return fmt.Errorf("mcp: post answer: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusAccepted {
		return fmt.Errorf("mcp: post answer: HTTP %s", res.Status)
	}
	return nil
}

// RequiresLegacyProtocol passes on the inner transport's answer (true with
// continuous listening, which only session revisions have).
func (t *streamableTransport) RequiresLegacyProtocol() bool { return t.inner.RequiresLegacyProtocol() }

// sseTransport is the legacy HTTP+SSE client transport with
// notifications/cancelled (see [httpTransport]). It cannot take server
// requests, so servers reached over SSE cannot elicit.
type sseTransport struct {
	*httpTransport
	inner *transport.SSE
}

var _ transport.HTTPConnection = (*sseTransport)(nil)

// SetConnectionLostHandler passes h to the inner transport.
func (t *sseTransport) SetConnectionLostHandler(h func(error)) { t.inner.SetConnectionLostHandler(h) }
