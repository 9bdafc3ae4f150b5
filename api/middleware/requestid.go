package middleware

import (
	"context"
	"net/http"

	"github.com/trellis-ai/trellis/internal/ids"
)

// ctxKey names a request-scoped context value; a pointer type with a
// String method, as chi's are.
type ctxKey struct{ name string }

func (k *ctxKey) String() string { return "api/middleware context value " + k.name }

var requestIDKey = &ctxKey{"request id"}

// RequestIDHeader carries the request id both ways.
const RequestIDHeader = "X-Request-Id"

// RequestID gives every request an id: the client's X-Request-Id when
// it is short and plain, else a fresh one. The response carries it, the
// logs name it, and a run started by the request takes it as its
// request_id.
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !plainID(id) {
			id = ids.Random("req_", 8)
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

// RequestIDFrom returns the request's id, "" outside a request.
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// plainID accepts 1 to 64 letters, digits, '-', '_' and '.'.
func plainID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
