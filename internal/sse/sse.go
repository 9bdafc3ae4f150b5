package sse

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Writer writes one SSE response. It is not safe for concurrent use.
type Writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
	failed  bool
}

// Start sends the stream's headers — text/event-stream, no caching, no
// buffering by proxies, and whatever the caller set on w's header
// before — with status 200, and flushes them. Each later write must
// complete within timeout; 0 sets no deadline (the server's own write
// timeout still applies).
func Start(w http.ResponseWriter, timeout time.Duration) *Writer {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &Writer{w: w, rc: http.NewResponseController(w), timeout: timeout}
	_ = s.rc.Flush()
	return s
}

// Event writes one frame: an id line when id > 0 (ids the client
// echoes in Last-Event-ID; none leaves the client's where it was), an
// event line when name is set, and data, which must hold no newline
// (JSON as encoding/json writes it holds none).
func (s *Writer) Event(id int64, name string, data []byte) error {
	b := s.buf[:0]
	if id > 0 {
		b = append(b, "id: "...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '\n')
	}
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	s.buf = b
	return s.write(b)
}

// JSON writes v, encoded, as Event does.
func (s *Writer) JSON(id int64, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.Event(id, name, data)
}

// Comment writes a comment line, which clients ignore: a keep-alive.
func (s *Writer) Comment(text string) error {
	b := append(s.buf[:0], ": "...)
	b = append(b, text...)
	b = append(b, "\n\n"...)
	s.buf = b
	return s.write(b)
}

// Failed reports whether a write failed: the client is gone, or took
// nothing for the write timeout.
func (s *Writer) Failed() bool { return s.failed }

func (s *Writer) write(b []byte) error {
	if s.timeout > 0 {
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	}
	_, err := s.w.Write(b)
	if err == nil {
		err = s.rc.Flush()
	}
	s.failed = s.failed || err != nil
	return err
}

// Retry writes the reconnection time a client waits before it
// reconnects (an SSE retry field), in milliseconds.
func (s *Writer) Retry(d time.Duration) error {
	b := append(s.buf[:0], "retry: "...)
	b = strconv.AppendInt(b, d.Milliseconds(), 10)
	b = append(b, "\n\n"...)
	s.buf = b
	return s.write(b)
}

// Ping writes the keep-alive comment ": ping".
func (s *Writer) Ping() error { return s.Comment("ping") }
