package middleware

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/trellis-ai/trellis/api/httperr"
)

// responseWriter records the status and whether headers went out. It is
// the one wrapper of the chain; Unwrap lets http.ResponseController reach
// Flush and SetWriteDeadline underneath.
type responseWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *responseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// LogRequests logs each request to log once it is answered, and tells
// answered its status (for a request counter), and recovers a handler's
// panic: logged with its stack, answered with a bare 500 when nothing
// was written yet, or by dropping the connection (the client of a cut
// SSE stream reconnects). Clients never see a stack. Logging and
// recovering are one middleware so that the chain wraps the writer
// once.
func LogRequests(log *slog.Logger, answered func(status int)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return logRequests(log, answered, next) }
}

func logRequests(log *slog.Logger, answered func(status int), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &responseWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.LogAttrs(r.Context(), slog.LevelError, "handler panicked",
					slog.String("request_id", RequestIDFrom(r.Context())), slog.String("path", r.URL.Path),
					slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
				if rw.status != 0 {
					panic(http.ErrAbortHandler)
				}
				httperr.Write(rw, httperr.New(http.StatusInternalServerError, "internal_error",
					"internal error; the server logged it under request id "+RequestIDFrom(r.Context())))
			}
			answered(rw.status)
			log.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("request_id", RequestIDFrom(r.Context())), slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.Int("status", rw.status), slog.Int64("bytes", rw.bytes),
				slog.Duration("duration", time.Since(start)))
		}()
		next.ServeHTTP(rw, r)
	})
}
