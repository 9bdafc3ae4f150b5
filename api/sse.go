package api

import (
	"net/http"
	"strconv"
	"time"
)

// sseWriter writes one SSE response: API.md's framing, one flush per
// event, a write deadline per write (a client that takes nothing for
// StreamWriteTimeout is dropped; the server's WriteTimeout, meant for
// short responses, does not apply to the stream).
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
}

// startSSE sends the stream's headers.
func startSSE(w http.ResponseWriter, conversationID, runID string, timeout time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Conversation-ID", conversationID)
	h.Set("X-Run-ID", runID)
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
	_ = s.rc.Flush()
	return s
}

// event writes one stored event: id, event and data lines.
func (s *sseWriter) event(seq int64, typ string, data []byte) error {
	b := append(s.buf[:0], "id: "...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, "\nevent: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	s.buf = b
	return s.write(b)
}

// notice writes an event that is no run's (document.status): event and
// data lines with no id, so it takes no seq and leaves the client's
// Last-Event-ID where the run's events put it.
func (s *sseWriter) notice(typ string, data []byte) error {
	b := append(s.buf[:0], "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	s.buf = b
	return s.write(b)
}

// ping writes the heartbeat comment.
func (s *sseWriter) ping() error { return s.write([]byte(": ping\n\n")) }

func (s *sseWriter) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}
