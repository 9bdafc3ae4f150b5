package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/trellis-ai/trellis/api/httperr"
)

// JSON-RPC 2.0 and A2A error codes (A2A v1.0, sections 9.5 and 5.4).
const (
	codeParse           = -32700
	codeInvalidRequest  = -32600
	codeMethodNotFound  = -32601
	codeInvalidParams   = -32602
	codeInternal        = -32603
	codeTaskNotFound    = -32001
	codeNotCancelable   = -32002
	codePushUnsupported = -32003
	codeUnsupported     = -32004
	codeContentType     = -32005
	codeVersion         = -32009
)

// rpcError is an error as the JSON-RPC binding answers it: its code and
// message, the Trellis error code as a google.rpc.ErrorInfo detail, and
// the HTTP status the response carries (the spec's mapping for A2A's
// errors; Trellis' own for rate and load limits).
type rpcError struct {
	Code    int
	Message string
	Status  int
	// Reason is the Trellis error code, "" for none.
	Reason     string
	RetryAfter int
}

func (e *rpcError) Error() string { return fmt.Sprintf("a2a: %d: %s", e.Code, e.Message) }

func invalidParams(format string, args ...any) *rpcError {
	return &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf(format, args...), Status: http.StatusBadRequest}
}

func unsupported(format string, args ...any) *rpcError {
	return &rpcError{Code: codeUnsupported, Message: fmt.Sprintf(format, args...), Status: http.StatusBadRequest}
}

func taskNotFound(id string) *rpcError {
	return &rpcError{Code: codeTaskNotFound, Message: "no task " + id + ", or it is not yours", Status: http.StatusNotFound,
		Reason: "not_found"}
}

// errorOf classifies err: an *rpcError as it is; one httperr knows by
// its HTTP status (404 is TaskNotFoundError, a 4xx of the request's own
// is InvalidParamsError, a conflict with the task's state is
// UnsupportedOperationError, limits and unavailability are
// InternalError under their own status and Retry-After); nil for an
// error of the server's.
func errorOf(err error) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	p := httperr.Of(err)
	if p == nil {
		return nil
	}
	out := &rpcError{Message: p.Message, Status: p.Status, Reason: p.Code, RetryAfter: p.RetryAfter}
	switch {
	case p.Status == http.StatusNotFound:
		out.Code = codeTaskNotFound
	case p.Status == http.StatusConflict:
		out.Code, out.Status = codeUnsupported, http.StatusBadRequest
	case p.Status == http.StatusTooManyRequests || p.Status >= 500:
		out.Code = codeInternal
	default:
		out.Code = codeInvalidParams
	}
	return out
}

// envelope is a JSON-RPC request as Trellis reads it.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// validID reports whether id is a JSON-RPC request id: a string or a
// number (Trellis answers every request, so null and none are refused).
func validID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *errorBody      `json:"error,omitempty"`
}

type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    []any  `json:"data,omitempty"`
}

// errorInfo is a google.rpc.ErrorInfo in ProtoJSON's Any form.
type errorInfo struct {
	Type   string `json:"@type"`
	Reason string `json:"reason"`
	Domain string `json:"domain"`
}

func (e *rpcError) body() *errorBody {
	b := &errorBody{Code: e.Code, Message: e.Message}
	if e.Reason != "" {
		b.Data = []any{errorInfo{Type: "type.googleapis.com/google.rpc.ErrorInfo", Reason: e.Reason, Domain: "trellis"}}
	}
	return b
}

// nullID is the id of a response to a request whose id could not be
// read.
var nullID = json.RawMessage("null")

func writeResult(w http.ResponseWriter, id json.RawMessage, result any) {
	writeJSON(w, http.StatusOK, response{JSONRPC: "2.0", ID: id, Result: result})
}

// reply answers a request with its result, or with err when there is
// one (the result is then not sent).
func (h *Handler) reply(w http.ResponseWriter, r *http.Request, id json.RawMessage, result any, err error) {
	if err != nil {
		h.writeError(w, r, id, err)
		return
	}
	writeResult(w, id, result)
}

// writeError answers err; an error of the server's is logged and
// answered as InternalError without its cause.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, id json.RawMessage, err error) {
	e := errorOf(err)
	if e == nil {
		h.log.LogAttrs(r.Context(), slog.LevelError, "A2A request failed", slog.Any("error", err))
		e = &rpcError{Code: codeInternal, Message: "internal error; the server logged it", Status: http.StatusInternalServerError,
			Reason: "internal_error"}
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if id == nil {
		id = nullID
	}
	writeJSON(w, e.Status, response{JSONRPC: "2.0", ID: id, Error: e.body()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil { // the adapter's own values hold nothing that fails
		data = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}
