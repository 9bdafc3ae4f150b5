package aisdk

import (
	"encoding/json"
	"net/http"
	"time"
)

// sseWriter writes the UI message stream: "data: <chunk JSON>" frames,
// ended by "data: [DONE]", one flush per chunk, a deadline per write
// (the server's WriteTimeout, meant for short responses, does not
// apply).
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
	failed  bool // a write failed: the client is gone
}

func startSSE(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Vercel-Ai-Ui-Message-Stream", "v1")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
	_ = s.rc.Flush()
	return s
}

func (s *sseWriter) chunk(c chunk) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.frame(data)
}

// done ends the stream.
func (s *sseWriter) done() error { return s.frame([]byte("[DONE]")) }

func (s *sseWriter) frame(data []byte) error {
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
