package a2a

import (
	"bytes"
	"cmp"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/internal/sse"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
)

// protocolVersion is the A2A version Trellis speaks.
const protocolVersion = "1.0"

// Config configures a Handler: Runs is required, and each other field
// works at zero as its comment says.
type Config struct {
	Runs *runs.Service
	// Tools are the agent card's skills; nil names none.
	Tools *operators.Provider
	// Security says how the server authenticates, for the agent card's
	// security schemes; zero is local mode (none).
	Security Security
	// Version is the agent card's version; "" is "dev".
	Version string
	// Heartbeat is the interval of ": ping" comments on an idle stream,
	// and WriteTimeout bounds each write to a stream: the server's.
	Heartbeat    time.Duration
	WriteTimeout time.Duration
	// Logger receives what goes wrong on the server's side; nil
	// discards.
	Logger *slog.Logger
}

// Security is how the server authenticates its clients.
type Security struct {
	// Keys: API keys, as Authorization: Bearer or X-Api-Key.
	Keys bool
	// OIDCIssuer is the OpenID Connect issuer whose bearer tokens
	// authenticate; "" for none.
	OIDCIssuer string
}

// Handler serves the agent card (Card) and the JSON-RPC binding (RPC).
type Handler struct {
	cfg Config
	log *slog.Logger
}

// New returns the handler.
func New(cfg Config) *Handler {
	return &Handler{cfg: cfg, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))}
}

// method is one JSON-RPC method: it answers the request's params, or
// streams its answer.
type method func(h *Handler, w http.ResponseWriter, r *http.Request, id, params json.RawMessage)

var methods = map[string]method{
	"SendMessage":          (*Handler).sendMessage,
	"SendStreamingMessage": (*Handler).sendStreamingMessage,
	"GetTask":              (*Handler).getTask,
	"ListTasks":            (*Handler).listTasks,
	"CancelTask":           (*Handler).cancelTask,
	"SubscribeToTask":      (*Handler).subscribeToTask,
}

// RPC is POST /a2a: one JSON-RPC request (batches are not served).
func (h *Handler) RPC(w http.ResponseWriter, r *http.Request) {
	if v := strings.TrimSpace(r.Header.Get("A2A-Version")); v != "" && v != protocolVersion && !strings.HasPrefix(v, "1.") {
		// An empty version is taken as 1.0: v0.3's methods have other
		// names, refused below with the same error.
		h.writeError(w, r, nil, &rpcError{Code: codeVersion, Status: http.StatusBadRequest,
			Message: "Trellis speaks A2A " + protocolVersion + "; this request asks for " + v})
		return
	}
	var raw json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		if errorOf(err) != nil { // the body limit
			h.writeError(w, r, nil, err)
			return
		}
		h.writeError(w, r, nil, &rpcError{Code: codeParse, Status: http.StatusBadRequest, Message: "the body is not JSON: " + err.Error()})
		return
	}
	var env envelope
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) || json.Unmarshal(raw, &env) != nil {
		h.writeError(w, r, nil, &rpcError{Code: codeInvalidRequest, Status: http.StatusBadRequest,
			Message: "the body is not a JSON-RPC request object (batches are not served)"})
		return
	}
	if !validID(env.ID) {
		h.writeError(w, r, nil, &rpcError{Code: codeInvalidRequest, Status: http.StatusBadRequest,
			Message: "a request needs an id, a string or a number"})
		return
	}
	if env.JSONRPC != "2.0" || env.Method == "" {
		h.writeError(w, r, env.ID, &rpcError{Code: codeInvalidRequest, Status: http.StatusBadRequest,
			Message: `a request needs "jsonrpc": "2.0" and a method`})
		return
	}
	m, ok := methods[env.Method]
	switch {
	case ok:
		m(h, w, r, env.ID, env.Params)
	case strings.Contains(env.Method, "/"): // message/send and the like
		h.writeError(w, r, env.ID, &rpcError{Code: codeVersion, Status: http.StatusBadRequest,
			Message: env.Method + " is an A2A 0.3 method; Trellis speaks A2A " + protocolVersion + " (SendMessage, GetTask, …)"})
	case strings.Contains(env.Method, "PushNotificationConfig"):
		h.writeError(w, r, env.ID, &rpcError{Code: codePushUnsupported, Status: http.StatusBadRequest,
			Message: "Trellis sends no push notifications: stream the task (SendStreamingMessage, SubscribeToTask) or poll it"})
	case env.Method == "GetExtendedAgentCard":
		h.writeError(w, r, env.ID, unsupported("Trellis has no extended agent card"))
	default:
		h.writeError(w, r, env.ID, &rpcError{Code: codeMethodNotFound, Status: http.StatusNotFound,
			Message: "no method " + env.Method})
	}
}

// decodeParams reads params into v; absent params are refused.
func decodeParams(params json.RawMessage, v any, what string) error {
	if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
		return invalidParams("params must be %s", what)
	}
	if err := json.Unmarshal(params, v); err != nil {
		return invalidParams("params are not %s: %v", what, err)
	}
	return nil
}

// stream writes a task's stream responses as SSE events, each a
// JSON-RPC response to the request id.
func (h *Handler) stream(w http.ResponseWriter, id json.RawMessage) (*sse.Writer, func(streamResponse) error) {
	sw := sse.Start(w, h.cfg.WriteTimeout)
	return sw, func(s streamResponse) error {
		return sw.JSON(0, "", response{JSONRPC: "2.0", ID: id, Result: s})
	}
}
