package agui

import (
	"encoding/json"
	"net/http"
	"time"
)

// sseWriter writes AG-UI's SSE framing: "data: <event JSON>" frames
// with no event names, one flush per event, a deadline per write (the
// server's WriteTimeout, meant for short responses, does not apply).
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
	// failed is set once a write failed: the client is gone.
	failed bool
}

func startSSE(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
	_ = s.rc.Flush()
	return s
}

func (s *sseWriter) event(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b := append(s.buf[:0], "data: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	s.buf = b
	return s.write(b)
}

func (s *sseWriter) ping() error { return s.write([]byte(": ping\n\n")) }

func (s *sseWriter) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	_, err := s.w.Write(b)
	if err == nil {
		err = s.rc.Flush()
	}
	s.failed = s.failed || err != nil
	return err
}
